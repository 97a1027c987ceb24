"""Probe: would the answer-relevance cross-encoder find the answers the offline writer misses?

Not part of `make bench` (nothing uses the model yet). Over the benchmark library
(tests/harness/answer_library.py), retrieval runs in-process and returns each design question's
12 passages as the stack would; the answer writer's candidate units are scored as today
(`choose_points`' scores) and by the cross-encoder, and for each question this prints where the
unit holding the expected answer ranks under each, the cross-encoder's best logit, and the time
to score all candidates and the top 24. Design questions only: the held-out ones stay unseen.

With `--blend`, it instead answers each design question with the model's probability blended
into today's score (`score + W * (p - 0.5)` for the top K units by today's score) for a grid of
K and W, the relevance bar chosen per setting as the best of a few: an optimistic upper bound
on what the blend can add, printed next to today's count.

    .venv/bin/python -m bench.probe_answer_relevance [--blend] [model_dir]   # default data/models/answer-relevance
"""

from __future__ import annotations

import asyncio
import math
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_answers import FIXTURES, ROOT, UNANSWERABLE, load_questions, occurs  # (puts tests/ on the path)
from zocrates_gateway.domain import synthesis as syn

TOP = 24


async def evidence_for(questions: list[dict]) -> dict[str, list]:
    from harness.answer_library import build_answer_library
    from zocrates_retrieval.adapters.store import Tenant
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.service import RetrievalService

    work = Path(tempfile.mkdtemp())
    build_answer_library(work / "zotero", FIXTURES)
    settings = RetrievalSettings(zotero_dir=work / "zotero", data_dir=work / "data", rescan_interval_s=0)
    service = RetrievalService(settings)
    await service.start()
    await service._ingest_task
    try:
        return {
            q["id"]: service.searcher.evidence(Tenant(settings.local_user_id, None), q["question"], 12)
            for q in questions
        }
    finally:
        await service.close()


def main() -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    args = [a for a in sys.argv[1:] if a != "--blend"]
    model_dir = Path(args[0]) if args else ROOT / "data" / "models" / "answer-relevance"
    if not (model_dir / "config.json").exists():
        raise SystemExit(f"no model in {model_dir}: run `make train-relevance` first")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()

    @torch.no_grad()
    def logits(question: str, texts: list[str]) -> list[float]:
        enc = tokenizer(
            [question] * len(texts), texts, truncation=True, max_length=96, padding=True, return_tensors="pt"
        )
        return model(**enc).logits.squeeze(-1).tolist()

    questions = [q for q in load_questions("design") if q["kind"] not in ("identifier", "follow-up")]
    evidence = asyncio.run(evidence_for(questions))
    if "--blend" in sys.argv:
        blend_grid(questions, evidence, logits)
        return
    print(
        "| id | kind | units | answer rank now | answer rank, cross-encoder | best logit | answer logit "
        f"| ms, all units | ms, top {TOP} |"
    )
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
        print(
            f"| {q['id']} | {q['kind']} | {len(now)} | {'-' if rank_now is None else rank_now + 1} | "
            f"{'-' if rank_model is None else rank_model + 1} | {best} | {answer} | {all_ms:.0f} | {top_ms:.0f} |"
        )


def blended_correct(
    questions: list[dict], evidence: dict, probability: dict, top: int, weight: float, bar: float
) -> int:
    """Design questions answered correctly (an unanswerable one: refused) when the top `top`
    units by today's score get `weight * (p - 0.5)` added."""
    today, today_bar = syn.score, syn.RELEVANCE_BAR
    correct = 0
    for q in questions:
        chunks = evidence[q["id"]]
        ask = syn.read_question(q["question"])
        units = syn.candidate_sentences(q["question"], chunks, ask)
        base = {u.text: today(lex, u) for lex, u in zip(syn.relevance(units, set(ask.words)), units)}
        lifted = {t: probability[q["id"]][t] for t in sorted(base, key=lambda t: -base[t])[:top]}

        def blended(lexical, unit, lifted=lifted):
            p = lifted.get(unit.text)
            return today(lexical, unit) + (0.0 if p is None else weight * (p - 0.5))

        syn.score, syn.RELEVANCE_BAR = blended, bar
        try:
            answer = syn.extractive_answer(q["question"], chunks)
        finally:
            syn.score, syn.RELEVANCE_BAR = today, today_bar
        prose = "".join(answer.pieces())
        correct += (
            answer.refused
            if q["kind"] in UNANSWERABLE
            else not answer.refused and any(occurs(x, prose) for x in q["expected"])
        )
    return correct


def blend_grid(questions: list[dict], evidence: dict, logits) -> None:
    probability = {}
    for q in questions:
        ask = syn.read_question(q["question"])
        texts = sorted({u.text for u in syn.candidate_sentences(q["question"], evidence[q["id"]], ask)})
        probability[q["id"]] = {
            t: 1 / (1 + math.exp(-x)) for t, x in zip(texts, logits(q["question"], texts) if texts else [])
        }
    print(f"today: {blended_correct(questions, evidence, probability, 0, 0.0, syn.RELEVANCE_BAR)} of {len(questions)}")
    print("| top K | weight W | correct (best bar) | bar |")
    print("| ---: | ---: | ---: | ---: |")
    for top in (8, 12, 16, 24):
        for weight in (0.2, 0.4, 0.6, 0.8):
            correct, bar = max(
                (blended_correct(questions, evidence, probability, top, weight, bar), bar)
                for bar in (0.45, 0.5, 0.55, 0.57, 0.6, 0.65, 0.7)
            )
            print(f"| {top} | {weight} | {correct} | {bar} |")


if __name__ == "__main__":
    main()
