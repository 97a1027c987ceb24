"""The relevance cross-encoder's training recipe runs end to end on a few pairs: it trains from
the shipped MiniLM weights, saves a model that loads again, and that model scores pairs."""

from __future__ import annotations

import math

from tools import train_relevance
from tools.training_data import read_splits


def test_a_small_run_trains_saves_and_scores(tmp_path):
    splits = read_splits(train_relevance.DATA)
    rows = [r for r in splits["train"] if r["label"] == 1][:8] + [r for r in splits["train"] if r["label"] == 0][:8]
    figures = train_relevance.train(
        rows, tmp_path, epochs=1, batch_size=8, max_length=48, lr=5e-5, device="cpu", seed=0
    )
    assert figures["pairs"] == 16 and figures["pairs_per_s"] > 0
    assert (tmp_path / "config.json").exists()
    scores = train_relevance.cross_encoder_scores(tmp_path, rows[:4] + rows[-4:], max_length=48, device="cpu")
    assert len(scores) == 8 and all(math.isfinite(s) for s in scores)
    assert len(set(scores)) > 1, "a trained model tells pairs apart"
