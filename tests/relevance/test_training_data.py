"""The relevance model's training data under bench/data/relevance: the committed files are the
ones the manifest records, a fresh build gives the same splits, no group straddles two splits,
every row is well formed, and the excluded sets stay out."""

from __future__ import annotations

import re
from pathlib import Path

from harness.training_data import (
    assert_excluded_sets_are_absent,
    assert_raw_files_match_the_manifest,
    data_set_fixtures,
)
from tools.relevance_data import build, sources
from tools.training_data import changed_splits, jsonl_bytes, straddling_groups
from tools.training_data import sha256_bytes as sha256

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "relevance"

EXCLUDED_NAMES = re.compile(r"(^|[^a-z])(wikiqa|sciq|bioasq|marco|newsqa)", re.IGNORECASE)
ROW_KEYS = {"question", "sentence", "label", "source", "group"}


manifest, splits = data_set_fixtures(DATA)


def test_committed_raw_files_match_the_manifest_sha256(manifest):
    assert_raw_files_match_the_manifest(DATA, manifest)


def test_raw_copies_are_complete(manifest):
    for name, source in manifest["sources"].items():
        assert sources.ROW_COUNTS[name](DATA / "raw") == source["expected_rows"], name


def test_committed_splits_match_the_manifest(manifest, splits):
    for name, info in manifest["splits"].items():
        path = DATA / "splits" / info["file"]
        assert sha256(jsonl_bytes(splits[name])) == info["sha256_jsonl"], name
        assert len(splits[name]) == info["rows"] and path.stat().st_size == info["bytes"]
    committed = {p.name for p in (DATA / "splits").iterdir()}
    assert committed == {info["file"] for info in manifest["splits"].values()}


def test_every_row_is_well_formed(manifest, splits):
    for name, rows in splits.items():
        for r in rows:
            assert set(r) == ROW_KEYS, (name, r)
            assert r["label"] in (0, 1) and type(r["label"]) is int, (name, r)
            assert r["question"].strip() and r["sentence"].strip() and r["group"], (name, r)
            assert r["source"] in manifest["sources"], (name, r)
        labels = {r["label"] for r in rows}
        assert labels == {0, 1}, f"{name} needs both labels, has {labels}"


def test_a_fresh_build_gives_the_committed_splits(manifest):
    fresh, _ = build.build_splits(DATA / "raw")
    assert changed_splits(fresh, manifest) == [], (
        "rebuilding differs from the committed splits; run `python -m tools.relevance_data.build` and commit its output"
    )


def test_no_group_appears_in_two_splits(splits):
    assert straddling_groups(splits) == {}


def test_no_evaluation_question_or_pair_is_trained_on(splits):
    trained = [r for name in build.TRAIN_SPLITS for r in splits[name]]
    pairs = {(r["question"], r["sentence"]) for r in trained}
    questions = {sources.norm(r["question"]) for r in trained}
    for name in build.EVAL_SPLITS:
        assert not pairs & {(r["question"], r["sentence"]) for r in splits[name]}, name
        assert not questions & {sources.norm(r["question"]) for r in splits[name]}, name


def test_a_scientific_set_is_held_out_for_evaluation(manifest, splits):
    assert {r["source"] for r in splits["eval_covidqa"]} == {"covidqa"}
    assert {r["source"] for r in splits["eval_pubmedqa"]} == {"pubmedqa"}
    assert manifest["splits"]["eval_covidqa"]["questions"] >= 500


def test_excluded_sets_are_absent(manifest, splits):
    assert_excluded_sets_are_absent(DATA, manifest, splits, EXCLUDED_NAMES)
    assert set(sources.EXCLUDED) >= {"WikiQA", "SciQ", "BioASQ"}
