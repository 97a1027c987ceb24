"""Fine-tune the shipped all-MiniLM-L6-v2 as a (question, sentence) relevance cross-encoder.

The offline answer writer chooses the sentences and table rows that answer a question by word
overlap and the bi-encoder's similarity; a question worded away from its answer ("At which
synchrotron were the crystals measured?") defeats both. This trains a cross-encoder on
bench/data/relevance (built by `python -m tools.relevance_data.build`): one logit per pair,
binary cross-entropy, one epoch by default, and reports AUROC on each held-out evaluation split
next to the bi-encoder's cosine on the same pairs.

    .venv/bin/python -m tools.train_relevance --out data/models/answer-relevance   # ~20 min on 2 cores
    .venv/bin/python -m tools.train_relevance --limit 64 --eval-rows 32 --out /tmp/x  # a smoke run

A lab with a GPU reruns it with `--device cuda` and more epochs; nothing else changes.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from tools.cross_encoder import add_fit_arguments, base_model, fine_tune, fit_options, logits
from tools.training_data import read_splits

DATA = Path(__file__).resolve().parent.parent / "bench" / "data" / "relevance"
EVAL_SPLITS = ("eval_xquad", "eval_covidqa", "eval_pubmedqa")


def train(rows: list[dict], out: Path, **options) -> dict:
    """Train on `rows` in their order and save the model and its tokenizer to `out`; `options`
    are `fine_tune`'s (`FIT_OPTIONS`). Returns the run's figures."""
    import torch

    return fine_tune(
        [(r["question"], r["sentence"]) for r in rows],
        [float(r["label"]) for r in rows],
        out,
        num_labels=1,
        loss=torch.nn.BCEWithLogitsLoss(),
        **options,
    )


def cross_encoder_scores(model_dir: Path, rows: list[dict], max_length: int, device: str) -> list[float]:
    return [row[0] for row in logits(model_dir, [(r["question"], r["sentence"]) for r in rows], max_length, device)]


def bi_encoder_scores(rows: list[dict], device: str) -> list[float]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(base_model(), device=device)
    q = model.encode([r["question"] for r in rows], normalize_embeddings=True, batch_size=64)
    s = model.encode([r["sentence"] for r in rows], normalize_embeddings=True, batch_size=64)
    return [float(x) for x in (q * s).sum(1)]


def evaluate(
    model_dir: Path, splits: dict[str, list[dict]], rows_per_split: int, max_length: int, device: str, seed: int
) -> dict:
    """AUROC of the trained cross-encoder and of the bi-encoder's cosine, per evaluation split
    (the same seeded sample of each split for both)."""
    from sklearn.metrics import roc_auc_score

    found = {}
    for name in EVAL_SPLITS:
        rows = list(splits[name])
        random.Random(seed).shuffle(rows)
        rows = rows[:rows_per_split]
        labels = [r["label"] for r in rows]
        started = time.monotonic()
        trained = cross_encoder_scores(model_dir, rows, max_length, device)
        seconds = time.monotonic() - started
        found[name] = {
            "pairs": len(rows),
            "auroc_cross_encoder": round(float(roc_auc_score(labels, trained)), 3),
            "auroc_bi_encoder": round(float(roc_auc_score(labels, bi_encoder_scores(rows, device))), 3),
            "inference_pairs_per_s": round(len(rows) / max(seconds, 1e-9), 1),
        }
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_fit_arguments(parser, max_length=96, max_length_help="tokens of question and sentence together")
    parser.add_argument("--limit", type=int, default=None, help="train on this many pairs only")
    parser.add_argument("--eval-rows", type=int, default=600, help="pairs of each evaluation split")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")

    splits = read_splits(DATA)
    rows = list(splits["train"])
    random.Random(args.seed).shuffle(rows)  # the build writes rows by source: a --limit takes from all
    rows = rows[: args.limit] if args.limit else rows
    report = {"training": train(rows, args.out, **fit_options(args))}
    report["evaluation"] = evaluate(args.out, splits, args.eval_rows, args.max_length, args.device, args.seed)
    (args.out / "training_report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
