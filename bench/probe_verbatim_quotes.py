"""Probe: does the trained verifier keep a sentence quoted verbatim from the passage it cites?

The offline answer writer quotes sentences word for word from the passages it cites, so the
verifier must score a sentence against its own passage as supported. Over the fixture PDFs of the
answer benchmark's library (tests/harness/answer_library.py), converted and chunked as retrieval
does (`convert_pdf`, `chunk_blocks` at 200 tokens), each prose chunk of at least three sentences
gives up to three of its sentences (8 to 60 words); each sentence is scored against its own chunk
("own") and against another chunk of the same paper that does not hold it ("absent"). Scorers:
the shipped model on the whole passage (`max_windows=1`), on sentence windows
(`zocrates_verifier.domain.windows`), and on windows with the verbatim rule. Prints the
P(support) distribution of each, the share at or above the gateway's 0.60 and the model's
calibrated threshold, and the time per pair.

    .venv/bin/python -m bench.probe_verbatim_quotes [--chunks 40] [--dtype float32]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from bench.bench_answers import FIXTURES  # (puts tests/ on the path)
from zocrates_verifier.adapters.backends.base import Pair
from zocrates_verifier.adapters.backends.local_torch import SHIPPED_MODEL_DIR, load_model

GATEWAY_THRESHOLD = 0.60


def quotes(chunks_wanted: int, seed: int = 5) -> tuple[list[Pair], list[Pair]]:
    """(own, absent): each sampled sentence against its own chunk and against another chunk."""
    from harness.answer_library import PAPERS
    from zocrates_retrieval.adapters.pdf import convert_pdf
    from zocrates_retrieval.domain.chunking import chunk_blocks

    candidates = []  # (paper, chunk text, sentences)
    texts_by_paper: dict[str, list[str]] = {}
    for paper in PAPERS:
        document = convert_pdf(FIXTURES / "pdfs" / paper.pdf)
        for chunk in chunk_blocks(document.blocks, 200):
            if chunk.kind != "text" or chunk.role not in ("body", "abstract"):
                continue
            texts_by_paper.setdefault(paper.name, []).append(chunk.text)
            sentences = [
                chunk.text[u.start : u.end]
                for u in chunk.units
                if u.kind == "sentence" and 8 <= len(chunk.text[u.start : u.end].split()) <= 60
            ]
            if len([u for u in chunk.units if u.kind == "sentence"]) >= 3 and sentences:
                candidates.append((paper.name, chunk.text, sentences))
    rng = random.Random(seed)
    rng.shuffle(candidates)
    own, absent = [], []
    for key, text, sentences in candidates[:chunks_wanted]:
        others = [t for t in texts_by_paper[key] if t != text]
        for sentence in rng.sample(sentences, min(3, len(sentences))):
            own.append(Pair(sentence, text))
            elsewhere = [t for t in others if " ".join(sentence.split()[:6]) not in t]
            if elsewhere:
                absent.append(Pair(sentence, rng.choice(elsewhere)))
    return own, absent


def distribution(scores: list[float], threshold: float) -> dict:
    q = statistics.quantiles(scores, n=10) if len(scores) > 1 else scores * 9
    return {
        "n": len(scores),
        "p10": round(q[0], 3),
        "median": round(statistics.median(scores), 3),
        "p90": round(q[-1], 3),
        f"at_or_above_{GATEWAY_THRESHOLD:.2f}": round(sum(s >= GATEWAY_THRESHOLD for s in scores) / len(scores), 3),
        f"at_or_above_{threshold:.2f}": round(sum(s >= threshold for s in scores) / len(scores), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    own, absent = quotes(args.chunks)
    threshold = json.loads((SHIPPED_MODEL_DIR / "config.json").read_text())["zocrates_verifier"]["threshold"]
    print(f"{len(own)} quoted sentences (own chunk), {len(absent)} against another chunk of the same paper")
    for name, options in (
        ("whole passage", {"max_windows": 1, "verbatim_rule": False}),
        ("sentence windows", {"verbatim_rule": False}),
        ("windows + verbatim rule", {}),
    ):
        model = load_model(SHIPPED_MODEL_DIR, dtype=args.dtype, max_seq_len=256, **options)
        model.setup("cpu")
        for label, pairs in (("own", own), ("absent", absent)):
            started = time.perf_counter()
            scores = model.predict(pairs)
            ms = (time.perf_counter() - started) * 1000 / len(pairs)
            print(f"{name:<24} {label:<7} {json.dumps(distribution(scores, threshold))}  {ms:.0f} ms/pair")


if __name__ == "__main__":
    main()
