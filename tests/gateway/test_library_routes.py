"""The lab-hosted library end to end: the real gateway over HTTP, the real retrieval service
(model, index, catalog) and the real discovery service, on a real nats-server with its object
store; only the verifier is a fake. Sync -> upload -> indexed -> a chat turn cites the file;
re-upload skipped; delete reaches search; users never see each other's library; bad input is
refused with a JSON 4xx and changes nothing. (Two replicas of retrieval: test_library_replicas.py.)"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from harness.serving import serving
from harness.system import FakeVerifier, bus_apps, collect
from zocrates_contracts import Candidate, CandidatesRechecked, RecheckRequested
from zocrates_contracts.subjects import LIBRARY_BUCKET, library_object_name
from zocrates_retrieval.ingest import INDEX_VERSION

pytestmark = [pytest.mark.connected, pytest.mark.asyncio(loop_scope="module")]

PARENT, PDF_KEY = "DVT2PAR1", "DVT2PDF1"
QUESTION = "What complications does deep venous thrombosis prophylaxis cause in trauma patients?"


@contextlib.asynccontextmanager
async def hosted_system(nats_url: str, data_dir):
    from zocrates_discovery.config import DiscoverySettings
    from zocrates_discovery.service import DiscoveryService
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.service import RetrievalService

    retrieval = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=data_dir, embedding_device="cpu"))
    discovery = DiscoveryService(DiscoverySettings(zotero_dir=None))
    async with bus_apps(nats_url, retrieval=retrieval, discovery=discovery, verifier=FakeVerifier()):
        app = create_app(GatewaySettings(nats_url=nats_url, library_max_upload_mb=1))
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
            yield Hosted(app, client, retrieval, discovery)


class Hosted:
    def __init__(self, app, client, retrieval, discovery):
        self.app, self.client, self.retrieval, self.discovery = app, client, retrieval, discovery
        self.tokens: dict[str, str] = {}

    async def auth(self, user: str) -> dict:
        if user not in self.tokens:
            self.tokens[user] = await self.app.state.gateway.tokens.create(user)
        return {"Authorization": f"Bearer {self.tokens[user]}"}

    async def sync(self, user: str, page: dict) -> httpx.Response:
        return await self.client.post("/library/sync", json=page, headers=await self.auth(user))

    async def upload(self, user: str, key: str, data: bytes, content_type: str = "application/pdf") -> httpx.Response:
        return await self.client.put(
            f"/library/attachments/{key}", content=data, headers={**await self.auth(user), "Content-Type": content_type}
        )

    async def status(self, user: str) -> dict:
        response = await self.client.get("/library/status", headers=await self.auth(user))
        assert response.status_code == 200, response.text
        return response.json()

    async def settled(self, user: str, timeout_s: float = 60.0) -> dict:
        """The user's status once their catalog is indexed through its latest change: the run
        going is awaited, and one that is due but not started (a kick that met a run ending, the
        sweep's) is waited for, so the status never reads a library half way."""
        async with asyncio.timeout(timeout_s):
            while True:
                if (task := self.retrieval._hosted_runs.get(user)) is not None and not task.done():
                    await task
                    continue
                if user not in {u for u, _, _ in await self.retrieval.catalog.pending(INDEX_VERSION)}:
                    return await self.status(user)
                await asyncio.sleep(0.05)

    async def objects(self) -> set[str]:
        bucket = await self.app.state.gateway.broker.config.connection_state.stream.object_store(LIBRARY_BUCKET)
        return {o.name for o in await bucket.list(ignore_deletes=True)}

    async def chat(self, user: str, message: str) -> list[dict]:
        return await collect(self.client, str(self.client.base_url), message, None, self.tokens[user])


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(module_nats_server, tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:  # never discover a real ~/Zotero
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        mp.delenv("ZOCRATES_ZOTERO_DIR", raising=False)
        mp.delenv("ZOCRATES_RETRIEVAL_ZOTERO_DIR", raising=False)
        async with hosted_system(module_nats_server.url, tmp_path_factory.mktemp("data")) as running:
            yield running


@pytest.fixture(scope="module")
def pdf() -> bytes:
    path = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "pdfs" / "cermine" / "test1.pdf"
    if not path.exists():
        pytest.skip(f"PDF fixtures not found at {path.parent}")
    return path.read_bytes()


def library(pdf: bytes, sync_id: str = "sync1") -> dict:
    return {
        "sync_id": sync_id,
        "items": [
            {
                "key": PARENT,
                "item_type": "journalArticle",
                "date": "2010",
                "title": "Complications related to deep venous thrombosis prophylaxis in trauma",
                "creators": [{"first_name": "Indraneel", "last_name": "Datta"}],
                "doi": "10.1186/1752-2897-4-1",
            },
            {
                "key": PDF_KEY,
                "item_type": "attachment",
                "parent_key": PARENT,
                "content_type": "application/pdf",
                "sha256": hashlib.sha256(pdf).hexdigest(),
                "filename": "datta.pdf",
            },
        ],
    }


async def test_a_synced_and_uploaded_pdf_is_indexed_and_cited_in_chat(system, pdf):
    synced = await system.sync("alice", library(pdf))
    assert synced.status_code == 200, synced.text
    assert synced.json() == {
        "library_id": "user",
        "sync_id": "sync1",
        "page": 0,
        "stored": 2,
        "deleted": 0,
        "needs_upload": [PDF_KEY],
        "complete": True,
    }

    uploaded = await system.upload("alice", PDF_KEY, pdf)
    assert uploaded.status_code == 200, uploaded.text
    assert uploaded.json() == {
        "library_id": "user",
        "key": PDF_KEY,
        "sha256": hashlib.sha256(pdf).hexdigest(),
        "size": len(pdf),
        "status": "queued",
    }
    status = await system.settled("alice")
    assert status["source"] == "hosted" and status["state"] == "done" and status["error"] is None
    assert (status["items"], status["attachments"], status["uploaded"], status["indexed"]) == (1, 1, 1, 1)
    assert status["chunks_indexed"] > 5 and status["failures_by_reason"] == {}

    events = await system.chat("alice", QUESTION)
    done = events[-1]
    assert done["event"] == "done", events[-1]
    cited = done["data"]["citations"]
    assert cited and {c["item_key"] for c in cited} == {PARENT}
    assert "Datta" in done["data"]["text"]

    again = await system.upload("alice", PDF_KEY, pdf)
    assert again.status_code == 200 and again.json()["status"] == "unchanged"
    assert (await system.sync("alice", library(pdf, "sync2"))).json()["needs_upload"] == []
    assert await system.objects() == {library_object_name("alice", "user", PDF_KEY, hashlib.sha256(pdf).hexdigest())}


async def test_the_novelty_filter_sees_the_synced_library(system, pdf):
    assert (await system.sync("dora", library(pdf))).status_code == 200
    requester = system.app.state.gateway.requester
    owned = Candidate(candidate_id="W1", title="Some other title", doi="https://doi.org/10.1186/1752-2897-4-1")
    new = Candidate(candidate_id="W2", title="An unrelated paper on coral reefs")
    for _ in range(50):  # discovery's consumer applies the page on its own; wait for it
        reply: CandidatesRechecked = await requester.request(
            RecheckRequested(
                turn_id="t1",
                session_id="s1",
                user_id="dora",
                candidates=[owned, new],
                reply_to=requester.reply_to(RecheckRequested),
            ),
            timeout=10,
        )
        if reply.dropped:
            break
        await asyncio.sleep(0.1)
    assert [d.candidate.candidate_id for d in reply.dropped] == ["W1"]
    assert [c.candidate_id for c in reply.candidates] == ["W2"]


async def test_another_user_sees_nothing_of_alices_library(system, pdf):
    assert (await system.sync("carol", library(pdf))).status_code == 200
    assert (await system.upload("carol", PDF_KEY, pdf)).status_code == 200
    await system.settled("carol")
    before = await system.objects()

    bob = await system.status("bob")
    assert bob["source"] == "none" and (bob["items"], bob["uploaded"], bob["chunks_indexed"]) == (0, 0, 0)
    stolen = await system.upload("bob", PDF_KEY, pdf)
    assert stolen.status_code == 404 and stolen.json()["error"]["code"] == "unknown_attachment"
    assert await system.objects() == before
    events = await system.chat("bob", QUESTION)
    assert events[-1]["event"] == "error" and events[-1]["data"]["code"] == "retrieval_not_available"
    assert not any(e["event"] == "done" for e in events)


async def test_a_rescan_reindexes_the_callers_library_and_a_user_without_one_gets_404(system, pdf):
    assert (await system.sync("fay", library(pdf))).status_code == 200
    assert (await system.upload("fay", PDF_KEY, pdf)).status_code == 200
    settled = await system.settled("fay")
    rescan = await system.client.post("/library/rescan", headers=await system.auth("fay"))
    assert rescan.status_code == 200, rescan.text
    assert rescan.json()["source"] == "hosted" and rescan.json()["items"] == 1
    again = await system.settled("fay")
    assert (again["indexed"], again["chunks_indexed"]) == (settled["indexed"], settled["chunks_indexed"])
    nobody = await system.client.post("/library/rescan", headers=await system.auth("gus"))
    assert nobody.status_code == 404 and nobody.json()["error"]["code"] == "no_library"
    assert (await system.client.post("/library/rescan")).status_code == 401


async def test_bad_input_is_refused_with_json_and_changes_nothing(system, pdf):
    assert (await system.sync("erin", library(pdf))).status_code == 200
    before, status_before = await system.objects(), await system.status("erin")
    auth = await system.auth("erin")

    cases = [
        (await system.upload("erin", PDF_KEY, b"%PDF-1.4\n" + b"0" * (1024 * 1024)), 413, "upload_too_large"),
        (await system.upload("erin", PDF_KEY, pdf, "image/png"), 415, "unsupported_media_type"),
        (await system.upload("erin", PDF_KEY, b"<html>not a pdf</html>"), 415, "not_a_pdf"),
        (await system.upload("erin", PDF_KEY, b""), 422, "empty_upload"),
        (await system.upload("erin", "NOPE2KEY", pdf), 404, "unknown_attachment"),
        (await system.upload("erin", PARENT, pdf), 404, "unknown_attachment"),  # not an attachment
        (await system.upload("erin", "bad.key", pdf), 422, "invalid_request"),
        (await system.client.post("/library/sync", content=b"{not json", headers=auth), 400, "malformed_json"),
        (
            await system.sync("erin", {"sync_id": "s", "items": [{"key": "lower", "item_type": "book"}]}),
            422,
            "invalid_request",
        ),
        (await system.sync("erin", {"sync_id": "s", "user_id": "alice"}), 422, "invalid_request"),
        (
            await system.sync(
                "erin",
                {
                    "sync_id": "s",
                    "items": [{"key": f"K{i:07d}", "item_type": "book", "title": "x" * 1900} for i in range(450)],
                },
            ),
            413,
            "sync_page_too_large",
        ),
        (
            await system.sync(
                "erin", {"sync_id": "s", "items": [{"key": "ABCD2345", "item_type": "book", "sha256": "0" * 64}]}
            ),
            422,
            "invalid_request",
        ),
        (await system.client.get("/library/status"), 401, "unauthorized"),
    ]
    for response, code, error in cases:
        assert (response.status_code, response.json()["error"]["code"]) == (code, error), response.text
    assert await system.objects() == before
    after = await system.status("erin")
    assert {k: after[k] for k in ("items", "attachments", "uploaded")} == {
        k: status_before[k] for k in ("items", "attachments", "uploaded")
    }


async def test_deleting_an_item_removes_it_from_search(system, pdf):
    assert (await system.sync("frank", library(pdf))).status_code == 200
    assert (await system.upload("frank", PDF_KEY, pdf)).status_code == 200
    assert (await system.settled("frank"))["chunks_indexed"] > 0
    name = library_object_name("frank", "user", PDF_KEY, hashlib.sha256(pdf).hexdigest())
    assert name in await system.objects()

    deleted = await system.sync("frank", {"sync_id": "sync2", "deleted": [PARENT]})
    assert deleted.status_code == 200 and deleted.json()["deleted"] == 2
    status = await system.settled("frank")
    assert (status["items"], status["attachments"], status["chunks_indexed"]) == (0, 0, 0)
    assert name not in await system.objects()
    events = await system.chat("frank", QUESTION)
    assert events[-1]["event"] == "error" and events[-1]["data"]["code"] == "retrieval_not_available"


async def test_a_discovery_replica_started_later_reads_the_hosted_library_from_the_catalog(system):
    """Discovery keeps no copy of its own: a replica that saw none of the sync pages (started
    after them, or another replica took them) reads the library from the catalog bucket."""
    from zocrates_contracts import SyncedItem
    from zocrates_discovery.config import DiscoverySettings
    from zocrates_discovery.service import DiscoveryService

    page = {
        "sync_id": "g1",
        "items": [
            SyncedItem(
                key="ABCD2345", item_type="journalArticle", title="Owned", extra="DOI: 10.1186/1752-2897-4-1"
            ).model_dump(mode="json")
        ],
    }
    assert (await system.sync("gina", page)).status_code == 200
    later = DiscoveryService(DiscoverySettings(zotero_dir=None))
    await later.connect_catalog(system.app.state.gateway.broker.config.connection_state.stream)
    await later.start()
    try:
        owned = Candidate(candidate_id="W1", title="x", doi="10.1186/1752-2897-4-1")
        assert [d.candidate.candidate_id for d in await later.recheck("gina", [owned])] == ["W1"]
        assert await later.recheck("hank", [owned]) == []
        assert (await system.sync("gina", {"sync_id": "g2", "deleted": ["ABCD2345"]})).json()["deleted"] == 1
        assert await later.recheck("gina", [owned]) == []  # the deletion is seen at the next request
    finally:
        await later.close()
