"""The verifier's training data under bench/data/verifier: the committed files are the ones the
manifest records, a fresh build gives the same splits, no group straddles two splits, train is
balanced, and SciFact dev and the excluded sets stay out."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.training_data import (
    assert_excluded_sets_are_absent,
    assert_raw_files_match_the_manifest,
    data_set_fixtures,
)
from tools.training_data import changed_splits, jsonl_bytes, straddling_groups
from tools.training_data import sha256_bytes as sha256
from tools.verifier_data import build, sources

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "verifier"
SHARED = ROOT.parent / "shared"
SCIFACT = SHARED / "fixtures" / "claims" / "scifact"
BEIR_QUERIES = SHARED / "fixtures" / "ir" / "scifact_beir" / "queries.jsonl"

#: Most rows of a label in train (or calibration) over fewest; the build makes them equal.
BALANCE_TOLERANCE = 1.02
EXCLUDED_NAMES = re.compile(r"(^|[^a-z])(sick|anli|healthver|covid|climate)", re.IGNORECASE)


def needs_shared():
    if not SCIFACT.exists():
        pytest.skip(f"shared fixtures not found at {SCIFACT}")


manifest, splits = data_set_fixtures(DATA)


def test_committed_raw_files_match_the_manifest_sha256(manifest):
    checked = assert_raw_files_match_the_manifest(DATA, manifest)
    assert checked >= 20


def test_committed_splits_match_the_manifest(manifest, splits):
    for name, info in manifest["splits"].items():
        rows = splits[name]
        assert sha256(jsonl_bytes(rows)) == info["sha256_jsonl"], name
        assert len(rows) == info["rows"]
        for r in rows:
            assert set(r) == {"claim", "passage", "label", "source", "group"}
            assert r["label"] in sources.LABELS and r["claim"] and r["passage"]


def test_a_fresh_build_gives_the_committed_splits(manifest):
    needs_shared()
    fresh, _ = build.build_splits(DATA / "raw", SHARED)
    assert changed_splits(fresh, manifest) == [], (
        "rebuilding differs from the committed splits; run `python -m tools.verifier_data.build` and commit its output"
    )


def test_no_group_appears_in_two_splits(splits):
    assert straddling_groups(splits) == {}


def test_no_evaluation_pair_is_in_train_or_calibration(splits):
    trained = {(r["claim"], r["passage"]) for name in build.TRAIN_SPLITS for r in splits[name]}
    for name in build.EVAL_SPLITS:
        assert not trained & {(r["claim"], r["passage"]) for r in splits[name]}, name
    eval_only = {n for n, s in sources.SOURCES.items() if s["role"] == "eval"}
    assert not eval_only & {r["source"] for name in build.TRAIN_SPLITS for r in splits[name]}


def test_train_and_calibration_labels_are_balanced(splits):
    for name in build.TRAIN_SPLITS:
        counts = [sum(r["label"] == label for r in splits[name]) for label in sources.LABELS]
        assert min(counts) > 0 and max(counts) / min(counts) <= BALANCE_TOLERANCE, (name, counts)


def test_scifact_dev_is_not_used(manifest, splits):
    """SciFact dev is the BEIR SciFact queries that are not train claims (300 of them)."""
    needs_shared()
    if not BEIR_QUERIES.exists():
        pytest.skip(f"{BEIR_QUERIES} not found")
    train_ids = {json.loads(line)["id"] for line in (SCIFACT / "claims_train.jsonl").read_text().splitlines()}
    queries = [json.loads(line) for line in BEIR_QUERIES.read_text().splitlines()]
    dev = {sources.norm(q["text"]) for q in queries if int(q["_id"]) not in train_ids}
    assert len(dev) >= 290
    used = {sources.norm(r["claim"]) for rows in splits.values() for r in rows}
    assert not used & dev
    assert not any("dev" in name for name in manifest["sources"] if "scifact" in name)


def test_excluded_sets_are_absent(manifest, splits):
    assert_excluded_sets_are_absent(DATA, manifest, splits, EXCLUDED_NAMES)
    assert set(sources.EXCLUDED) >= {"SICK", "ANLI", "HealthVer", "COVID-Fact", "Climate-FEVER"}
