"""First run without Zotero (issue 14): with no Zotero library on the machine, the local
library is the bundled demo (demo/zotero), indexed like any other and never written to;
`ZOCRATES_ZOTERO_DIR` (or a real ~/Zotero) replaces it, and a hosted deployment never uses it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import pytest_asyncio

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import LibraryStatusRequested, RetrievalRequested
from zocrates_discovery.config import DiscoverySettings
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.service import RetrievalService
from zocrates_runtime.zotero_dir import demo_zotero_dir

DEMO = Path(__file__).resolve().parents[2] / "demo" / "zotero"
ENV = ("ZOCRATES_ZOTERO_DIR", "ZOCRATES_RETRIEVAL_ZOTERO_DIR", "ZOCRATES_DISCOVERY_ZOTERO_DIR", "ZOCRATES_MODE")
#: A phrase from each demo paper and the item it belongs to (demo/library.toml).
PHRASES = [
    ("Inferior vena cava filters migrate, cause inferior vena cava occlusion", "9MZZ8GTY"),
    ("Human resource shortages, staff attitudes and shortage of equipment were major constraints", "2YMFSIPP"),
    ("927-fold more selective for the N-domain than the C-domain", "BL3QQWU7"),
]

on_module_loop = pytest.mark.asyncio(loop_scope="module")  # the tests that share one ingest


def no_zotero_here(mp: pytest.MonkeyPatch, home: Path) -> None:
    """A machine without Zotero: an empty home, no Zotero directory configured, local mode."""
    mp.setenv("HOME", str(home))
    for name in ENV:
        mp.delenv(name, raising=False)


def tree(root: Path) -> dict[str, tuple]:
    """Every file under `root` with its size, mtime and SHA-256: what "never written" means."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_without_zotero_both_services_read_the_demo_library(monkeypatch, tmp_path):
    no_zotero_here(monkeypatch, tmp_path / "home")
    settings = RetrievalSettings(data_dir=tmp_path / "data")
    assert settings.zotero_dir == DEMO == demo_zotero_dir()
    assert settings.library_source == "demo"
    assert DiscoverySettings(_env_file=None).zotero_dir == DEMO


def test_zotero_dir_and_a_real_home_zotero_replace_the_demo(monkeypatch, tmp_path, schema_dir):
    no_zotero_here(monkeypatch, tmp_path / "home")
    ZoteroLibraryBuilder(tmp_path / "mine", schema_dir).close()
    monkeypatch.setenv("ZOCRATES_ZOTERO_DIR", str(tmp_path / "mine"))
    settings = RetrievalSettings(data_dir=tmp_path / "data")
    assert (settings.zotero_dir, settings.library_source) == (tmp_path / "mine", "zotero_dir")
    assert DiscoverySettings(_env_file=None).zotero_dir == tmp_path / "mine"

    monkeypatch.delenv("ZOCRATES_ZOTERO_DIR")
    ZoteroLibraryBuilder(tmp_path / "home" / "Zotero", schema_dir).close()
    assert RetrievalSettings(data_dir=tmp_path / "data").zotero_dir == tmp_path / "home" / "Zotero"
    assert DiscoverySettings(_env_file=None).zotero_dir == tmp_path / "home" / "Zotero"


def test_a_hosted_deployment_never_falls_back_to_the_demo(monkeypatch, tmp_path):
    no_zotero_here(monkeypatch, tmp_path / "home")
    monkeypatch.setenv("ZOCRATES_MODE", "hosted")
    monkeypatch.setenv("ZOCRATES_NATS_USER", "zocrates")  # hosted mode refuses to start without
    settings = RetrievalSettings(data_dir=tmp_path / "data")
    assert (settings.zotero_dir, settings.library_source) == (None, "none")
    assert DiscoverySettings(_env_file=None).zotero_dir is None


def test_the_demo_configured_by_path_is_still_named_the_demo(monkeypatch, tmp_path):
    no_zotero_here(monkeypatch, tmp_path / "home")
    monkeypatch.setenv("ZOCRATES_ZOTERO_DIR", str(DEMO / ".." / "zotero"))
    assert RetrievalSettings(data_dir=tmp_path / "data").library_source == "demo"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def demo_service(tmp_path_factory):
    """Retrieval as `make run` starts it on a machine without Zotero: default settings."""
    before = tree(DEMO)
    data = tmp_path_factory.mktemp("data")
    with pytest.MonkeyPatch.context() as mp:
        no_zotero_here(mp, tmp_path_factory.mktemp("home"))
        svc = RetrievalService(RetrievalSettings(data_dir=data, embedding_device="cpu", rescan_interval_s=0))
    await svc.start()
    await svc._ingest_task
    yield svc, data, before
    await svc.close()


@on_module_loop
@pytest.mark.parametrize(("phrase", "item_key"), PHRASES)
async def test_retrieval_indexes_the_demo_papers(demo_service, phrase, item_key):
    svc, _, _ = demo_service
    reply = await svc.search(
        RetrievalRequested(
            turn_id="t1",
            session_id="s1",
            user_id="local",
            reply_to="zocrates.reply.gw.retrieval",
            query=phrase,
            top_k=3,
        )
    )
    assert reply.error is None, reply.error
    assert reply.chunks[0].item_key == item_key, [(c.item_key, c.text[:60]) for c in reply.chunks]


@on_module_loop
async def test_status_and_health_name_the_demo_library(demo_service):
    svc, _, _ = demo_service
    status = await svc.library_status(
        LibraryStatusRequested(turn_id="t1", session_id="s1", user_id="local", reply_to="zocrates.reply.gw.library")
    )
    assert (status.source, status.state, status.items, status.attachments, status.indexed) == ("demo", "done", 3, 3, 3)
    assert status.failures_by_reason == {}
    health = svc.health()
    assert health["library"] == {"source": "demo", "zotero_dir": str(DEMO), "papers": 3}
    assert (health["status"], health["device"], health["rejected"]) == ("ok", "cpu", {})
    assert health["cpu_fallbacks"] == {svc.embedder.name: {"count": 0, "last_reason": None}}
    other = await svc.library_status(
        LibraryStatusRequested(turn_id="t1", session_id="s1", user_id="ada", reply_to="zocrates.reply.gw.library")
    )
    assert other.source == "none"  # the demo is the local user's, nobody else's


@on_module_loop
async def test_the_demo_is_never_written_and_its_index_lives_in_the_data_dir(demo_service):
    svc, data, before = demo_service
    assert tree(DEMO) == before
    assert svc.settings.store_dir == data / "retrieval"
    assert any((data / "retrieval").rglob("*")), "no index written to the data directory"
