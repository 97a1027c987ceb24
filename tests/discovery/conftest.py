"""Fixtures of the discovery tests: recorded API answers, settings for replay, schema-built Zotero DBs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.zotero import ZoteroLibraryBuilder as ZoteroDatabase
from zocrates_discovery.config import DiscoverySettings


@pytest.fixture
def api(fixtures_dir: Path) -> Path:
    """Recorded responses of OpenAlex, Crossref, Semantic Scholar, Unpaywall (paper-qa's cassettes)."""
    return fixtures_dir / "api" / "paperqa"


@pytest.fixture
def recorded(api: Path):
    """`recorded("openalex/works_search__Augmenting*")`: the parsed body of one recorded answer."""

    def load(pattern: str):
        matches = sorted(api.glob(pattern))
        assert matches, f"no recorded answer matches {pattern} under {api}"
        text = matches[0].read_text()
        return json.loads(text) if matches[0].suffix == ".json" else text

    return load


@pytest.fixture
def settings(tmp_path) -> DiscoverySettings:
    """Settings for replayed tests: real API hosts (respx intercepts them), no waiting between retries."""
    return DiscoverySettings(
        _env_file=None,
        openalex_api_key="test-key",
        contact_email="researcher@example.org",
        zotero_dir=None,
        retry_wait_initial_s=0.0,
        retry_wait_max_s=0.0,
        cache_ttl_s=0,
    )


@pytest.fixture
def zotero(tmp_path, fixtures_dir: Path):
    """A fresh Zotero data directory built from Zotero's published schema."""
    db = ZoteroDatabase(tmp_path / "Zotero", fixtures_dir / "zotero" / "schema")
    yield db
    db.close()


@pytest.fixture(scope="module")
def module_zotero(tmp_path_factory, request):
    """Like `zotero`, built once per test module (for read-only tests)."""
    fixtures = Path(request.config.rootpath).parent / "shared" / "fixtures"
    if not fixtures.exists():
        pytest.skip(f"shared fixtures not found at {fixtures}")
    db = ZoteroDatabase(tmp_path_factory.mktemp("zotero"), fixtures / "zotero" / "schema")
    yield db
    db.close()
