"""Fixtures and checks for every committed training-data set under bench/data (the verifier's
and the relevance model's): its manifest and splits, that its raw files are the ones its
manifest records, and that the sets it excludes stay out of its sources, splits and raw files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.training_data import read_manifest, read_raw, read_splits
from tools.training_data import sha256_bytes as sha256


def data_set_fixtures(data: Path):
    """The `manifest` and `splits` fixtures (module scope) of the data set under `data`; a test
    module binds them to those names."""

    @pytest.fixture(scope="module")
    def manifest() -> dict:
        return read_manifest(data)

    @pytest.fixture(scope="module")
    def splits(manifest) -> dict[str, list[dict]]:
        return read_splits(data, manifest)

    return manifest, splits


def assert_raw_files_match_the_manifest(data: Path, manifest: dict) -> int:
    """Each raw file under `data`, as committed and as upstream, hashes to what the manifest
    records, and the manifest lists every raw file and only those; returns how many it checked."""
    checked = 0
    for source in manifest["sources"].values():
        for f in source["files"]:
            path = data / f["path"]
            assert sha256(path.read_bytes()) == f["sha256"], f"{path} differs from the manifest"
            upstream = read_raw(data / "raw", f["path"].removeprefix("raw/"))
            assert sha256(upstream) == f["sha256_upstream"], f"{path}: upstream bytes differ"
            checked += 1
    committed = {str(p.relative_to(data)) for p in (data / "raw").rglob("*") if p.is_file()}
    listed = {f["path"] for source in manifest["sources"].values() for f in source["files"]}
    assert committed == listed, "every raw file, and only those, is in the manifest"
    return checked


def assert_excluded_sets_are_absent(
    data: Path, manifest: dict, splits: dict[str, list[dict]], excluded_names: re.Pattern
) -> None:
    """No split row comes from a source the manifest does not list, and no source's name,
    repository or title, nor any raw file's path, names an excluded set."""
    used = {r["source"] for rows in splits.values() for r in rows}
    assert used <= set(manifest["sources"])
    for name, source in manifest["sources"].items():
        for text in (name, source["repo"], source["title"]):
            assert not excluded_names.search(text), f"{name}: {text}"
    for path in (data / "raw").rglob("*"):
        assert not excluded_names.search(str(path.relative_to(data))), path
