"""The lab-hosted library in retrieval: sync pages and uploaded files (claim-checks in a real
NATS object store) feed the same ingest; incremental by SHA-256; deletions reach the index;
each user sees only their own catalog (in a real NATS KV bucket); the catalog survives a
restart; an abandoned indexing lease is taken over."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import time
from pathlib import Path

import nats
import pytest
from nats.js.errors import ObjectNotFoundError

from harness.waiting import wait_until
from zocrates_contracts import (
    AttachmentUploaded,
    LibraryStatusRequested,
    LibrarySyncRequested,
    RetrievalRequested,
    SyncedItem,
)
from zocrates_contracts.subjects import LIBRARY_BUCKET, library_object_name
from zocrates_retrieval.adapters.catalog import Catalog, IndexRun
from zocrates_retrieval.adapters.files import LibraryFiles
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.ingest import INDEX_VERSION
from zocrates_retrieval.service import RetrievalService

pytestmark = pytest.mark.connected

PARENT, PDF_KEY, NOTE, LOOSE = "DVT2PAR1", "DVT2PDF1", "NOTE2AB1", "LOOSE2A1"
ENVELOPE = {"session_id": "s1", "reply_to": "zocrates.reply.gw.library"}


def sync(user: str, items: list[SyncedItem], deleted=(), **page) -> LibrarySyncRequested:
    return LibrarySyncRequested(
        turn_id="t1",
        user_id=user,
        sync_id=page.pop("sync_id", "sync1"),
        items=items,
        deleted=list(deleted),
        **ENVELOPE,
        **page,
    )


def article(title: str = "Complications related to deep venous thrombosis prophylaxis in trauma") -> SyncedItem:
    return SyncedItem(
        key=PARENT,
        item_type="journalArticle",
        title=title,
        date="2010-02-15",
        creators=[{"first_name": "Indraneel", "last_name": "Datta"}],
        publication="Journal of Trauma Management & Outcomes",
        extra="DOI: 10.1186/1752-2897-4-1",
    )


def attachment(sha: str, key: str = PDF_KEY, parent: str | None = PARENT) -> SyncedItem:
    return SyncedItem(
        key=key,
        item_type="attachment",
        parent_key=parent,
        title="Full Text PDF",
        content_type="application/pdf",
        sha256=sha,
        filename="datta.pdf",
    )


def ask(user: str, query: str) -> RetrievalRequested:
    return RetrievalRequested(turn_id="t2", user_id=user, query=query, top_k=5, **ENVELOPE)


@pytest.fixture
async def bucket(nats_server):
    nc = await nats.connect(nats_server.url)
    js = nc.jetstream()
    store = await js.create_object_store(LIBRARY_BUCKET)
    yield js, store, await Catalog.open(js)
    await nc.close()


class Hosted:
    """A retrieval service over a real object store, and the plugin's side of an upload."""

    def __init__(self, js, store, catalog: Catalog, data_dir: Path):
        self.js, self.store, self.catalog, self.data_dir = js, store, catalog, data_dir
        self.service: RetrievalService | None = None

    async def start(self) -> RetrievalService:
        settings = RetrievalSettings(
            zotero_dir=None, data_dir=self.data_dir, embedding_device="cpu", optimize_after_chunks=1
        )
        self.service = RetrievalService(settings, files=LibraryFiles(self.js, LIBRARY_BUCKET), catalog=self.catalog)
        await self.service.start()
        return self.service

    async def upload(self, user: str, data: bytes, key: str = PDF_KEY, content_type: str = "application/pdf"):
        sha = hashlib.sha256(data).hexdigest()
        name = library_object_name(user, "user", key, sha)
        await self.store.put(name, data)
        return await self.service.accept_upload(
            AttachmentUploaded(
                turn_id="t3",
                user_id=user,
                key=key,
                object_name=name,
                sha256=sha,
                size=len(data),
                content_type=content_type,
                **ENVELOPE,
            )
        ), name

    async def status(self, user: str):
        return await self.service.library_status(LibraryStatusRequested(turn_id="t4", user_id=user, **ENVELOPE))

    async def settled(self, user: str):
        """Wait until the user's library is indexed through its catalog; return the status reply."""
        for _ in range(1200):
            while (task := self.service._hosted_runs.get(user)) is not None and not task.done():
                await task
            if (status := await self.status(user)).state != "running":
                return status
            await asyncio.sleep(0.1)
        raise AssertionError(f"{user}'s library is still indexing: {status}")


@pytest.fixture
async def hosted(bucket, tmp_path, no_home_zotero):
    h = Hosted(*bucket, tmp_path / "data")
    await h.start()
    yield h
    if h.service is not None:
        await h.service.close()


async def test_sync_then_upload_indexes_the_file_with_its_parents_metadata(hosted, pdf_dir):
    svc = hosted.service
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    sha = hashlib.sha256(pdf).hexdigest()
    note = SyncedItem(
        key=NOTE,
        item_type="note",
        parent_key=PARENT,
        note="<p>Inferior vena cava filters were placed in 12 of our patients.</p>",
    )
    synced = await svc.sync_library(sync("alice", [article(), attachment(sha), note]))
    assert synced.error is None and synced.stored == 3 and synced.complete
    assert synced.needs_upload == [PDF_KEY]

    accepted, _ = await hosted.upload("alice", pdf)
    assert accepted.status == "queued" and accepted.error is None
    status = await hosted.settled("alice")
    assert status.source == "hosted" and status.state == "done"
    assert (status.items, status.attachments, status.uploaded, status.awaiting_upload) == (1, 1, 1, 0)
    assert status.indexed == 2 and status.chunks_indexed > 5 and status.failures == []

    reply = await svc.search(ask("alice", "What complications does thrombosis prophylaxis cause in trauma?"))
    assert reply.error is None and reply.chunks
    top = reply.chunks[0]
    assert top.item_key == PARENT and top.attachment_key in (PDF_KEY, None)
    assert top.title.startswith("Complications related to deep venous thrombosis") and top.year == 2010
    assert [(c.first_name, c.last_name) for c in top.creators] == [("Indraneel", "Datta")]
    assert {c.attachment_key for c in reply.chunks} >= {PDF_KEY}

    again = await svc.sync_library(sync("alice", [attachment(sha)], sync_id="sync2"))
    assert again.needs_upload == []  # the server has this file


async def test_same_file_again_is_skipped_and_changed_metadata_reindexes(hosted, pdf_dir):
    svc = hosted.service
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    await svc.sync_library(sync("alice", [article(), attachment(hashlib.sha256(pdf).hexdigest())]))
    await hosted.upload("alice", pdf)
    await hosted.settled("alice")
    chunks = svc.status("alice")["chunks_indexed"]
    runs = await hosted.catalog.index_run("alice")

    accepted, _ = await hosted.upload("alice", pdf)
    assert accepted.status == "unchanged"
    assert svc._hosted_runs["alice"].done() and await hosted.catalog.index_run("alice") == runs  # nothing queued

    await svc.sync_library(
        sync("alice", [article("Thromboprophylaxis complications (revised title)")], sync_id="sync2")
    )
    status = await hosted.settled("alice")
    run, _ = await hosted.catalog.index_run("alice")
    assert status.indexed == 1 and run.progress["indexed"] == 1  # re-read with the new title
    reply = await svc.search(ask("alice", "thrombosis prophylaxis complications"))
    assert reply.chunks[0].title == "Thromboprophylaxis complications (revised title)"
    assert svc.status("alice")["chunks_indexed"] == chunks


async def test_deleting_an_item_removes_its_chunks_and_its_file(hosted, pdf_dir, make):
    svc = hosted.service
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    loose = make.text_pdf([("Notes", ["Boron nitride nanosheets glow blue under ultraviolet light."])])
    await svc.sync_library(
        sync(
            "alice",
            [
                article(),
                attachment(hashlib.sha256(pdf).hexdigest()),
                attachment(hashlib.sha256(loose).hexdigest(), key=LOOSE, parent=None),
            ],
        )
    )
    _, name = await hosted.upload("alice", pdf)
    await hosted.upload("alice", loose, key=LOOSE)
    await hosted.settled("alice")

    removed = await svc.sync_library(sync("alice", [], deleted=[PARENT], sync_id="sync2"))
    assert removed.deleted == 2  # the parent and its attachment
    status = await hosted.settled("alice")
    assert (status.items, status.attachments, status.uploaded) == (0, 1, 1)
    reply = await svc.search(ask("alice", "thrombosis prophylaxis in trauma"))
    assert reply.chunks and {c.item_key for c in reply.chunks} == {LOOSE}
    with pytest.raises(ObjectNotFoundError):
        await hosted.store.get_info(name)


async def test_one_user_never_sees_anothers_library(hosted, pdf_dir):
    svc = hosted.service
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    await svc.sync_library(sync("alice", [article(), attachment(hashlib.sha256(pdf).hexdigest())]))
    await hosted.upload("alice", pdf)
    await hosted.settled("alice")

    bob = await hosted.settled("bob")
    assert bob.source == "none" and (bob.items, bob.attachments, bob.chunks_indexed) == (0, 0, 0)
    refused = await svc.search(ask("bob", "thrombosis prophylaxis in trauma"))
    assert refused.chunks == [] and refused.error.code == "not_available"
    stolen, _ = await hosted.upload("bob", pdf)  # alice's key, bob's catalog: unknown there
    assert stolen.status == "rejected" and stolen.error.code == "invalid" and PDF_KEY in stolen.error.message
    assert (await hosted.settled("bob")).uploaded == 0


async def test_unreadable_files_are_reported_once_and_survive_a_restart(hosted, make, tmp_path):
    svc = hosted.service
    bad = make.corrupt_pdf()
    await svc.sync_library(sync("alice", [article(), attachment(hashlib.sha256(bad).hexdigest())]))
    await hosted.upload("alice", bad)
    status = await hosted.settled("alice")
    assert status.failures_by_reason == {"corrupt": 1} and status.failures[0].title.startswith("Complications")

    await svc._kick("alice")  # the same bytes are not converted again
    status = await hosted.settled("alice")
    run, _ = await hosted.catalog.index_run("alice")
    assert status.failures_by_reason == {"corrupt": 1} and run.progress["sources_done"] == 1
    assert run.progress["failures"][0]["content_hash"] and run.progress["indexed"] == 0

    await svc.close()
    restarted = await hosted.start()
    status = await hosted.settled("alice")
    assert status.source == "hosted" and (status.items, status.uploaded) == (1, 1)
    assert status.failures_by_reason == {"corrupt": 1}
    assert (await restarted.catalog.failures("alice"))[0].reason == "corrupt"


async def test_the_local_account_is_not_synced_over_its_zotero_dir(bucket, tmp_path, schema_dir, no_home_zotero):
    from harness.zotero import ZoteroLibraryBuilder

    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    b.close()
    svc = RetrievalService(
        RetrievalSettings(zotero_dir=b.dir, data_dir=tmp_path / "data", embedding_device="cpu"), catalog=bucket[2]
    )
    await svc.start()
    try:
        refused = await svc.sync_library(sync("local", [article()]))
        assert refused.error.code == "not_available" and "Zotero data directory" in refused.error.message
        assert not await svc.catalog.has_library("local")
    finally:
        await svc.close()


async def test_a_full_sync_removes_what_it_did_not_list_once_every_page_arrived(bucket):
    catalog = bucket[2]
    old = SyncedItem(key="OLD2ITEM", item_type="book", title="Gone from Zotero")
    await catalog.apply_sync("alice", sync("alice", [old, article()], sync_id="first"))
    await catalog.apply_sync("bob", sync("bob", [old], sync_id="first"))

    last = await catalog.apply_sync("alice", sync("alice", [], sync_id="full", page=1, final=True, full=True))
    assert not last.complete and (await catalog.counts("alice")).items == 2  # page 0 has not arrived yet
    first = await catalog.apply_sync(
        "alice", sync("alice", [article()], sync_id="full", page=0, final=False, full=True)
    )
    assert first.complete and first.deleted == 1
    assert (await catalog.counts("alice")).items == 1 and (await catalog.counts("bob")).items == 1  # bob untouched
    again = await catalog.apply_sync(
        "alice", sync("alice", [article()], sync_id="full", page=0, final=False, full=True)
    )
    assert again.deleted == 0 and again.complete  # a redelivered page changes nothing more
    assert [k for (_, k) in await catalog._items("alice")] == [PARENT]


async def test_concurrent_pages_of_one_sync_lose_no_page(bucket):
    """Two replicas applying pages of the same sync at once: the compare-and-set keeps both."""
    catalog = bucket[2]
    pages = [
        sync(
            "alice",
            [SyncedItem(key=f"KEY{n:05d}", item_type="book", title=f"Book {n}")],
            sync_id="burst",
            page=n,
            final=n == 7,
            full=True,
        )
        for n in range(8)
    ]
    outcomes = await asyncio.gather(*(catalog.apply_sync("alice", p) for p in pages))
    assert sum(o.complete for o in outcomes) >= 1 and (await catalog.counts("alice")).items == 8
    record = json.loads((await catalog.kv.get("s.alice.user.burst")).value)
    assert record["pages"] == list(range(8)) and record["done"]


async def test_an_abandoned_indexing_lease_is_taken_over(hosted, pdf_dir):
    """A replica that died holding a user's lease stops beating; after `lease_s` a sweep of
    another replica takes the library over and indexes it."""
    svc = hosted.service
    svc.lease_s, svc.sweep_s = 1.5, 0.3
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    await svc.sync_library(sync("alice", [article(), attachment(hashlib.sha256(pdf).hexdigest())]))

    # A dead replica's record: it claimed the lease, then nothing.
    async def lease_free():
        run, revision = await hosted.catalog.index_run("alice")
        return (run, revision) if run.owner is None else None

    run, revision = await wait_until(lease_free, 30, "the sync's own run to give its lease back")
    dead = IndexRun(owner="dead-replica", heartbeat_at=time.time(), indexed_through=run.indexed_through)
    await hosted.catalog._cas("r.alice", dead.__dict__, revision)
    synced = svc.indexer.runs.get("alice")
    accepted, _ = await hosted.upload("alice", pdf)
    assert accepted.status == "queued"

    def kicked_run_ended():  # the upload's run tried for the lease
        run = svc.indexer.runs.get("alice")
        return run is not synced and run.done()

    await wait_until(kicked_run_ended, 10, "the upload's run to try for the lease")
    run, _ = await hosted.catalog.index_run("alice")
    assert run.owner == "dead-replica" and (await hosted.status("alice")).state == "running"  # respected
    status = await hosted.settled("alice")
    assert status.state == "done" and status.uploaded == 1 and status.chunks_indexed > 5
    assert (await hosted.catalog.index_run("alice"))[0].owner is None


async def test_a_library_indexed_at_an_earlier_index_version_is_indexed_again_once(hosted, pdf_dir):
    """Index version 7 gave passages their pages, which only a new conversion knows: a sweep
    takes up a hosted library last indexed by an earlier release, without waiting for a sync."""
    svc = hosted.service
    svc.sweep_s = 0.3
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    await svc.sync_library(sync("alice", [article(), attachment(hashlib.sha256(pdf).hexdigest())]))
    await hosted.upload("alice", pdf)
    assert (await hosted.settled("alice")).state == "done"
    run, revision = await hosted.catalog.index_run("alice")
    assert run.index_version == INDEX_VERSION and await hosted.catalog.pending(INDEX_VERSION) == []

    # The record as a release before the field left it.
    earlier = {k: v for k, v in dataclasses.asdict(run).items() if k != "index_version"}
    assert not IndexRun(**earlier).indexed(await hosted.catalog.version("alice"), INDEX_VERSION)
    await hosted.catalog._cas("r.alice", earlier, revision)

    async def indexed_again():
        again, _ = await hosted.catalog.index_run("alice")
        return again if again.index_version == INDEX_VERSION and again.owner is None else None

    again = await wait_until(indexed_again, 60, "the sweep to index the library again")
    assert again.progress["state"] == "done" and again.progress["started_at"] > run.progress["started_at"]
    assert await hosted.catalog.pending(INDEX_VERSION) == []  # once
    assert (await hosted.status("alice")).state == "done"


def test_zotero_dir_is_also_read_from_the_shared_variable(tmp_path, monkeypatch, no_home_zotero):
    (tmp_path / "zotero").mkdir()
    (tmp_path / "zotero" / "zotero.sqlite").touch()
    monkeypatch.setenv("ZOCRATES_ZOTERO_DIR", str(tmp_path / "zotero"))
    assert RetrievalSettings(data_dir=tmp_path).zotero_dir == tmp_path / "zotero"


async def test_a_hosted_librarys_collections_and_tags_come_from_the_sync_and_change_without_re_embedding(hosted):
    from zocrates_contracts import LibraryOutlineRequested, SyncedCollection

    svc = hosted.service
    note = SyncedItem(key=NOTE, item_type="note", parent_key=PARENT, note="<p>Filters were placed in 12 patients.</p>")
    tree = [
        SyncedCollection(key="COLL2AB1", name="Trauma"),
        SyncedCollection(key="COLL2AB2", name="Reviews", parent_key="COLL2AB1"),
    ]
    placed = article().model_copy(update={"collections": ["COLL2AB2"], "tags": ["to-read"]})
    await svc.sync_library(sync("alice", [placed, note], collections=tree))
    await hosted.settled("alice")

    def scoped(scope: dict) -> RetrievalRequested:
        return RetrievalRequested(turn_id="t2", user_id="alice", query="filters placed", scope=scope, **ENVELOPE)

    trauma = {"kind": "collection", "library_id": "user", "collection_key": "COLL2AB1"}
    assert (await svc.search(scoped(trauma))).scope_empty  # the note's item is in Reviews, below Trauma
    below = await svc.search(scoped({**trauma, "subcollections": True}))
    assert {c.item_key for c in below.chunks} == {PARENT}
    to_read = {"kind": "tag", "library_id": "user", "tag": "to-read"}
    assert {c.item_key for c in (await svc.search(scoped(to_read))).chunks} == {PARENT}
    outline = await svc.outline(LibraryOutlineRequested(turn_id="t5", user_id="alice", part="collections", **ENVELOPE))
    assert {(c.name, c.parent_key, c.items) for c in outline.collections} == {
        ("Trauma", None, 0),
        ("Reviews", "COLL2AB1", 1),
    }

    retagged = placed.model_copy(update={"tags": ["done"]})
    await svc.sync_library(sync("alice", [retagged], sync_id="sync2"))
    await hosted.settled("alice")
    run, _ = await hosted.catalog.index_run("alice")
    assert (run.progress["indexed"], run.progress["placed"]) == (0, 1)  # the note's chunks, updated in place
    assert (await svc.search(scoped(to_read))).scope_empty
    done = await svc.search(scoped({"kind": "tag", "library_id": "user", "tag": "done"}))
    assert {c.item_key for c in done.chunks} == {PARENT}
    bob = await svc.search(RetrievalRequested(turn_id="t6", user_id="bob", query="filters", scope=to_read, **ENVELOPE))
    assert bob.chunks == [] and bob.error is not None  # bob has no library here: told so, shown nothing


async def test_a_synced_abstract_answers_before_any_file_is_uploaded(hosted, pdf_dir):
    svc = hosted.service
    abstract = (
        "Low molecular weight heparin given to trauma patients for thrombosis prophylaxis caused major "
        "bleeding in 3% of them, most often after solid organ injury."
    )
    pdf = (pdf_dir / "cermine" / "test1.pdf").read_bytes()
    item = article().model_copy(update={"abstract": abstract})
    synced = await svc.sync_library(sync("alice", [item, attachment(hashlib.sha256(pdf).hexdigest())]))
    assert synced.error is None and synced.needs_upload == [PDF_KEY]
    status = await hosted.settled("alice")
    assert status.abstracts == 1 and status.awaiting_upload == 1
    reply = await svc.search(ask("alice", "How often did heparin prophylaxis cause bleeding in trauma?"))
    top = reply.chunks[0]
    assert (top.item_key, top.attachment_key, top.kind, top.text) == (PARENT, None, "abstract", abstract)

    # its file, once uploaded, is read by its words first: the status counts it (LibraryStatus 4)
    await hosted.upload("alice", pdf)
    status = await hosted.settled("alice")
    assert status.files_searchable == 1 and status.indexed == 2 and status.schema_version == 4
