"""Probe: would the answer-relevance cross-encoder find the answers the offline writer misses?

Not part of `make bench` (nothing uses the model yet). Over the benchmark library
(tests/harness/answer_library.py), retrieval runs in-process and returns each design question's
12 passages as the stack would; the answer writer's candidate units are scored as today
(`choose_points`' scores) and by the cross-encoder, and for each question this prints where the
unit holding the expected answer ranks under each, the cross-encoder's best logit, and the time
to score all candidates and the top 24. Design questions only: the held-out ones stay unseen.

    .venv/bin/python -m bench.probe_answer_relevance [model_dir]   # default data/models/answer-relevance
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

from zocrates_gateway.domain import synthesis as syn

from bench.bench_answers import FIXTURES, ROOT, load_questions, occurs  # (puts tests/ on the path)

TOP = 24


async def evidence_for(questions: list[dict]) -> dict[str, list]:
    from harness.answer_library import build_answer_library
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.service import RetrievalService
    from zocrates_retrieval.store import Tenant

    work = Path(tempfile.mkdtemp())
    build_answer_library(work / "zotero", FIXTURES)
    settings = RetrievalSettings(zotero_dir=work / "zotero", data_dir=work / "data", rescan_interval_s=0)
    service = RetrievalService(settings)
    await service.start()
    await service._ingest_task
    try:
        return {q["id"]: service.searcher.evidence(Tenant(settings.local_user_id, None), q["question"], 12)
                for q in questions}
    finally:
        await service.close()


def main() -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "data" / "models" / "answer-relevance"
    if not (model_dir / "config.json").exists():
        raise SystemExit(f"no model in {model_dir}: run `make train-relevance` first")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()

    @torch.no_grad()
    def logits(question: str, texts: list[str]) -> list[float]:
        enc = tokenizer([question] * len(texts), texts, truncation=True, max_length=96, padding=True,
                        return_tensors="pt")
        return model(**enc).logits.squeeze(-1).tolist()

    questions = [q for q in load_questions("design") if q["kind"] != "identifier"]
    evidence = asyncio.run(evidence_for(questions))
    print("| id | kind | units | answer rank now | answer rank, cross-encoder | best logit | answer logit "
          f"| ms, all units | ms, top {TOP} |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for q in questions:
        chunks = evidence[q["id"]]
        ask = syn.read_question(q["question"])
        units = syn.candidate_sentences(q["question"], chunks, ask)
        lexical = syn.relevance(units, set(ask.words))
        order = sorted(range(len(units)), key=lambda i: -syn.score(lexical[i], units[i]))
        now = [units[i] for i in order]  # as choose_points ranks them
        started = time.monotonic()
        scores = logits(q["question"], [u.text for u in now]) if now else []
        all_ms = (time.monotonic() - started) * 1000
        started = time.monotonic()
        if now:
            logits(q["question"], [u.text for u in now[:TOP]])
        top_ms = (time.monotonic() - started) * 1000
        by_model = sorted(range(len(now)), key=lambda i: -scores[i])
        holds = [any(occurs(x, u.text) for x in q["expected"]) for u in now]
        rank_now = holds.index(True) if any(holds) else None
        rank_model = next((r for r, i in enumerate(by_model) if holds[i]), None)
        answer = f"{scores[by_model[rank_model]]:.2f}" if rank_model is not None else "-"
        best = f"{max(scores):.2f}" if scores else "-"
        print(f"| {q['id']} | {q['kind']} | {len(now)} | {'-' if rank_now is None else rank_now + 1} | "
              f"{'-' if rank_model is None else rank_model + 1} | {best} | {answer} | {all_ms:.0f} | {top_ms:.0f} |")


if __name__ == "__main__":
    main()
