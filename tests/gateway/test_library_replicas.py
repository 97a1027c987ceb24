"""The lab-hosted library with two retrieval replicas (and two discovery replicas) behind one
gateway, as docs/deploy.md runs it: real nats-server, real gateway over HTTP, real retrieval
services (model, converter, shared catalog in KV) with separate data dirs and one shared
Qdrant collection (qdrant-client's local engine standing in for the Qdrant server; no Qdrant
binary here). Which replica pulls a request is decided by starting and stopping replicas, so
each step is deterministic: sync pages stored by one, the uploads' claim-checks taken by the
other, status alike from both, a chat cites the file, a deletion reaches search, another user
sees nothing, and a replica stopped mid-ingest leaves the rest to the other."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from pathlib import Path

import httpx
import pytest

from harness.serving import serving
from harness.system import FakeVerifier, collect
from harness.waiting import wait_until
from zocrates_contracts import Candidate, LibraryStatusRequested, Message
from zocrates_contracts.subjects import LIBRARY_BUCKET
from zocrates_runtime.settings import ZocratesSettings

pytestmark = [pytest.mark.connected, pytest.mark.slow, pytest.mark.timeout(600)]

PDFS = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "pdfs"
QUESTION = "What complications does deep venous thrombosis prophylaxis cause in trauma patients?"
DATTA, DATTA_PDF = "DVT2PAR1", "DVT2PDF1"
ENVELOPE = {"session_id": "s1", "reply_to": "zocrates.reply.gw.library"}


class LockedClient:
    """One Qdrant client shared by both replicas, one call at a time (a server serialises
    writes per collection; the local engine is not thread-safe). Closing is the test's."""

    def __init__(self, client):
        self._client, self._lock = client, threading.RLock()

    def __getattr__(self, name):
        attr = getattr(self._client, name)
        if not callable(attr) or name == "close":
            return attr if name != "close" else (lambda *a, **k: None)

        def locked(*args, **kwargs):
            with self._lock:
                return attr(*args, **kwargs)

        return locked


class Replicas:
    """Two retrieval replicas, two discovery replicas, a fake verifier and a gateway."""

    def __init__(self, nats_url: str, data_root: Path, monkeypatch):
        from qdrant_client import QdrantClient

        from zocrates_retrieval import service as retrieval_service
        from zocrates_retrieval.adapters.store import ServerStore

        self.base = ZocratesSettings(nats_url=nats_url)
        self.data_root = data_root
        self.retrieval: dict[str, object] = {}  # name -> RetrievalService while running
        self._apps: dict[str, object] = {}
        self._others: list = []
        qdrant = LockedClient(QdrantClient(":memory:"))
        monkeypatch.setattr(retrieval_service, "open_store", lambda settings, dim: ServerStore(qdrant, "chunks", dim))

    async def start_retrieval(self, name: str):
        from zocrates_retrieval.app import create_app
        from zocrates_retrieval.config import RetrievalSettings
        from zocrates_retrieval.service import RetrievalService

        service = RetrievalService(
            RetrievalSettings(zotero_dir=None, data_dir=self.data_root / name, embedding_device="cpu")
        )
        service.sweep_s = 0.5  # take over a stopped replica's work quickly
        app = create_app(self.base, service=service)
        await app.start()
        self.retrieval[name], self._apps[name] = service, app
        return service

    async def stop_retrieval(self, name: str) -> None:
        await self._apps.pop(name).stop()
        del self.retrieval[name]

    async def start_others(self) -> None:
        from zocrates_discovery.app import create_app as discovery_app
        from zocrates_discovery.config import DiscoverySettings
        from zocrates_discovery.service import DiscoveryService
        from zocrates_verifier.app import create_app as verifier_app

        self.discovery = [DiscoveryService(DiscoverySettings(zotero_dir=None)) for _ in range(2)]
        self._others = [
            *(discovery_app(self.base, service=d) for d in self.discovery),
            verifier_app(self.base, service=FakeVerifier()),
        ]
        for app in self._others:
            await app.start()

    async def stop(self) -> None:
        for name in list(self._apps):
            await self.stop_retrieval(name)
        for app in self._others:
            await app.stop()


@contextlib.asynccontextmanager
async def gateway(nats_url: str):
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings

    app = create_app(GatewaySettings(nats_url=nats_url, library_max_upload_mb=5))
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=120) as client:
        yield Http(app, client)


class Http:
    def __init__(self, app, client):
        self.app, self.client, self.tokens = app, client, {}

    async def auth(self, user: str) -> dict:
        if user not in self.tokens:
            self.tokens[user] = await self.app.state.gateway.tokens.create(user)
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    async def sync(self, user: str, page: dict) -> dict:
        response = await self.client.post("/library/sync", json=page, headers=await self.auth(user))
        assert response.status_code == 200, response.text
        return response.json()

    async def upload(self, user: str, key: str, data: bytes) -> httpx.Response:
        return await self.client.put(
            f"/library/attachments/{key}",
            content=data,
            headers={**await self.auth(user), "Content-Type": "application/pdf"},
        )

    async def status(self, user: str) -> dict:
        response = await self.client.get("/library/status", headers=await self.auth(user))
        assert response.status_code == 200, response.text
        return response.json()

    async def settled(self, user: str, timeout_s: float = 300) -> dict:
        """Poll GET /library/status (any replica answers) until the library is indexed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while (status := await self.status(user))["state"] == "running":
            assert loop.time() < deadline, f"still indexing after {timeout_s} s: {status}"
            await asyncio.sleep(0.2)
        return status

    async def objects(self) -> set[str]:
        bucket = await self.app.state.gateway.broker.config.connection_state.stream.object_store(LIBRARY_BUCKET)
        return {o.name for o in await bucket.list(ignore_deletes=True)}

    async def chat(self, user: str, message: str) -> list[dict]:
        return await collect(self.client, str(self.client.base_url), message, None, self.tokens[user])


@pytest.fixture
async def system(nats_server, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # never discover a real ~/Zotero
    monkeypatch.delenv("ZOCRATES_ZOTERO_DIR", raising=False)
    monkeypatch.delenv("ZOCRATES_RETRIEVAL_ZOTERO_DIR", raising=False)
    replicas = Replicas(nats_server.url, tmp_path, monkeypatch)
    await replicas.start_others()
    try:
        async with gateway(nats_server.url) as http:
            yield replicas, http
    finally:
        await replicas.stop()


def pdf(name: str) -> bytes:
    path = PDFS / name
    if not path.exists():
        pytest.skip(f"PDF fixtures not found at {PDFS}")
    return path.read_bytes()


def article(key: str, title: str, **fields) -> dict:
    return {"key": key, "item_type": "journalArticle", "title": title, **fields}


def attachment(key: str, parent: str, data: bytes) -> dict:
    return {
        "key": key,
        "item_type": "attachment",
        "parent_key": parent,
        "content_type": "application/pdf",
        "sha256": hashlib.sha256(data).hexdigest(),
        "filename": f"{key}.pdf",
    }


async def replica_status(service, user: str) -> dict:
    reply = await service.library_status(LibraryStatusRequested(turn_id="t", user_id=user, **ENVELOPE))
    return reply.model_dump(exclude=set(Message.model_fields))  # what it says, not its envelope


async def test_two_replicas_share_one_hosted_library(system):
    replicas, http = system
    datta, other = pdf("cermine/test1.pdf"), pdf("cermine/example2.pdf")

    # Only replica A runs: it stores both pages of a full sync.
    await replicas.start_retrieval("a")
    first = await http.sync(
        "alice",
        {
            "sync_id": "full1",
            "page": 0,
            "final": False,
            "full": True,
            "items": [
                article(
                    DATTA,
                    "Complications related to deep venous thrombosis prophylaxis in trauma",
                    date="2010",
                    creators=[{"first_name": "Indraneel", "last_name": "Datta"}],
                    doi="10.1186/1752-2897-4-1",
                ),
                attachment(DATTA_PDF, DATTA, datta),
            ],
        },
    )
    last = await http.sync(
        "alice",
        {
            "sync_id": "full1",
            "page": 1,
            "final": True,
            "full": True,
            "items": [article("OTHER2P1", "A second paper"), attachment("OTHER2F1", "OTHER2P1", other)],
        },
    )
    assert first["needs_upload"] == [DATTA_PDF] and last["needs_upload"] == ["OTHER2F1"] and last["complete"]

    # Only replica B runs: the claim-checks of the uploads reach it, and it knows the items.
    await replicas.start_retrieval("b")
    await replicas.stop_retrieval("a")
    for key, data in ((DATTA_PDF, datta), ("OTHER2F1", other)):
        uploaded = await http.upload("alice", key, data)
        assert uploaded.status_code == 200 and uploaded.json()["status"] == "queued", uploaded.text
    status = await http.settled("alice")
    assert status["source"] == "hosted" and status["state"] == "done" and status["error"] is None
    assert (status["items"], status["attachments"], status["uploaded"], status["indexed"]) == (2, 2, 2, 2)
    assert status["chunks_indexed"] > 10 and status["failures_by_reason"] == {}

    # Both run: each answers the same status; a chat (either replica searches) cites the file.
    a = await replicas.start_retrieval("a")
    b = replicas.retrieval["b"]
    from_a, from_b = await replica_status(a, "alice"), await replica_status(b, "alice")
    assert from_a == from_b and from_a["state"] == "done" and from_a["uploaded"] == 2
    assert {k: status[k] for k in ("items", "uploaded", "indexed", "chunks_indexed")} == {
        k: from_a[k] for k in ("items", "uploaded", "indexed", "chunks_indexed")
    }
    events = await http.chat("alice", QUESTION)
    assert events[-1]["event"] == "done", events[-1]
    assert {c["item_key"] for c in events[-1]["data"]["citations"]} >= {DATTA}
    again = await http.upload("alice", DATTA_PDF, datta)
    assert again.status_code == 200 and again.json()["status"] == "unchanged"

    # Both discovery replicas see the synced library in their novelty filter.
    owned = Candidate(candidate_id="W1", title="Some other title", doi="https://doi.org/10.1186/1752-2897-4-1")
    for discovery in replicas.discovery:
        assert [d.candidate.candidate_id for d in await discovery.recheck("alice", [owned])] == ["W1"]
        assert await discovery.recheck("bob", [owned]) == []

    # Another user sees nothing, whichever replica answers.
    for service in (a, b):
        bob = await replica_status(service, "bob")
        assert bob["source"] == "none" and (bob["items"], bob["chunks_indexed"]) == (0, 0)
    stolen = await http.upload("bob", DATTA_PDF, datta)
    assert stolen.status_code == 404 and stolen.json()["error"]["code"] == "unknown_attachment"
    await http.auth("bob")
    refused = await http.chat("bob", QUESTION)
    assert refused[-1]["event"] == "error" and refused[-1]["data"]["code"] == "retrieval_not_available"

    # A deletion stored by one replica reaches search and the bucket, indexed by whichever runs it.
    objects = await http.objects()
    deleted = await http.sync("alice", {"sync_id": "del1", "deleted": [DATTA]})
    assert deleted["deleted"] == 2
    status = await http.settled("alice")
    assert (status["items"], status["attachments"], status["uploaded"]) == (1, 1, 1)
    assert not any(DATTA_PDF in name for name in await http.objects()) and len(objects) == 2
    hits = await a.search(_ask("alice"))
    assert hits.chunks and {c.item_key for c in hits.chunks} == {"OTHER2P1"}
    for discovery in replicas.discovery:  # no longer owned
        assert await discovery.recheck("alice", [owned]) == []


async def test_a_replica_stopped_mid_ingest_leaves_the_rest_to_the_other(system):
    replicas, http = system
    papers = ["cermine/test1.pdf", "cermine/example2.pdf", "cermine/example3.pdf", "zotero/recognizePDF_test_DOI.pdf"]
    # Twice over (8 files), so that what is left after A's first file outlasts A's stop.
    files = {f"PDF2{n}{'AB'[n // 4]}A1": pdf(name) for n, name in enumerate(papers * 2)}
    a = await replicas.start_retrieval("a")
    a.heartbeat_s = 0.1  # its progress reaches the catalog at once, not seconds after its first file
    items = []
    for n, (key, data) in enumerate(files.items()):
        items += [article(f"PAR2{n}AA1", f"Paper {n}"), attachment(key, f"PAR2{n}AA1", data)]
    await http.sync("carol", {"sync_id": "s1", "items": items})
    for key, data in files.items():
        assert (await http.upload("carol", key, data)).status_code == 200

    # A indexes; B joins; A stops after its first file, giving its lease back unfinished.
    b = await replicas.start_retrieval("b")

    async def a_indexed_its_first_file() -> bool:
        # A running run with files left: not the short run an early upload started and A ended
        # (on a fast machine it is done before the last upload lands, and a done run has no stop).
        run, _ = await a.catalog.index_run("carol")
        p = run.progress or {}
        return run.owner == a.instance and p.get("state") == "running" and 1 <= p["files_done"] <= p["files_todo"] - 2

    await wait_until(a_indexed_its_first_file, 120, "replica A to index its first file", interval=0.05)
    await replicas.stop_retrieval("a")
    stopped, _ = await b.catalog.index_run("carol")
    assert stopped.progress["state"] == "stopped" and stopped.progress["sources_done"] < len(files)
    assert (await replica_status(b, "carol"))["state"] == "running"  # not done: B will take it

    status = await http.settled("carol")
    assert "carol" in b._hosted_runs and b._hosted_runs["carol"].done()  # B finished it
    assert status["state"] == "done" and status["uploaded"] == len(files)
    assert status["indexed"] + len(status["failures"]) == len(files) and status["chunks_indexed"] > 10


def _ask(user: str):
    from zocrates_contracts import RetrievalRequested

    return RetrievalRequested(turn_id="t", user_id=user, query=QUESTION, top_k=5, **ENVELOPE)
