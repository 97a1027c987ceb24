"""The retrieval service's entry point for the bus wiring: start, search, status, close, and
the lab-hosted library (sync pages, uploaded files) that feeds the same ingest.

Hosted libraries are shared by every replica: their catalog, their ingest progress and who
indexes them live in the catalog's KV bucket (see `hosted`). One replica at a time indexes a
user's library, under a lease it renews while it runs; a replica that stops gives the lease
back, and one that dies loses it after `lease_s`, when another replica's sweep takes over.

Blocking work (loading the model, opening the index, ingesting, embedding a query) runs in
threads so the event loop keeps serving other requests. The service never answers with
invented data: when it cannot search (nothing indexed yet for this user, index or model not
available) it says so in `EvidenceRetrieved.error` with `code="not_available"`.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import socket
import time
import uuid
from collections import Counter, OrderedDict
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from zocrates_contracts import (
    AttachmentAccepted,
    AttachmentUploaded,
    EvidenceChunk,
    EvidenceRetrieved,
    IngestFailure,
    LibraryItemsFound,
    LibraryLookupRequested,
    LibraryStatus,
    LibraryStatusRequested,
    LibrarySynced,
    LibrarySyncRequested,
    RetrievalRequested,
    ServiceError,
)
from zocrates_runtime.zotero_dir import demo_papers
from zocrates_runtime.zotero_snapshot import database_signature
from zocrates_contracts.messages import MAX_STATUS_FAILURES
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.embed import Embedder, Reranker
from zocrates_retrieval.hosted import Catalog, Lease, LibraryFiles, import_old_catalog
from zocrates_retrieval.ingest import IngestProgress, Ingestor
from zocrates_retrieval.lookup import ItemIndex, snapshot_index, synced_index
from zocrates_retrieval.search import Searcher
from zocrates_retrieval.store import ChunkStore, EdgeStore, ServerStore, SparseEncoder, Tenant, count_chunks
from zocrates_retrieval.zotero import Source, read_library

log = logging.getLogger(__name__)
SERVICE = "retrieval"
FETCH_TIMEOUT_S = 300.0  # one uploaded file from the object store (100 MB at a slow few MB/s)
#: A hosted user's indexing lease: renewed every HEARTBEAT_S while a run goes (with its
#: progress); a holder silent for LEASE_S is presumed dead (replicas' clocks within seconds,
#: as NTP keeps them). Every SWEEP_S each replica takes over libraries left unindexed.
LEASE_S, HEARTBEAT_S, SWEEP_S = 30.0, 2.0, 10.0
#: Hosted users whose lookup index is kept in memory (rebuilt when their catalog changes).
LOOKUP_INDEXES = 32


def open_store(settings: RetrievalSettings, dim: int) -> ChunkStore:
    """The index the settings name: embedded (qdrant-edge) or a Qdrant server."""
    if settings.qdrant_mode == "server":
        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return ServerStore.connect(settings.qdrant_url, key, settings.collection, dim)
    return EdgeStore(settings.store_dir / "edge" / settings.collection, dim)


class RetrievalService:
    """Library ingest and hybrid search for every user; one instance per process."""

    def __init__(self, settings: RetrievalSettings, files: LibraryFiles | None = None,
                 catalog: Catalog | None = None):
        self.settings = settings
        self.files = files  # the uploaded files of hosted libraries (set by the bus wiring)
        self.catalog = catalog  # the hosted libraries' catalog in KV (set by the bus wiring)
        self.instance = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.lease_s, self.heartbeat_s, self.sweep_s = LEASE_S, HEARTBEAT_S, SWEEP_S
        self.embedder: Embedder | None = None
        self.store: ChunkStore | None = None
        self.searcher: Searcher | None = None
        self.ingestor: Ingestor | None = None
        self.startup_error: str | None = None
        self.reranker_error: str | None = None
        self._progress: dict[str, IngestProgress] = {}  # the local library's (hosted ones: in KV)
        self._ingest_task: asyncio.Task | None = None
        self._rescan_task: asyncio.Task | None = None
        self._local_rescan: asyncio.Task | None = None  # one asked for by POST /library/rescan
        self._ingest_lock = asyncio.Lock()  # one ingest at a time: they share the CPU and the index
        self._closing = asyncio.Event()
        self._hosted_runs: dict[str, asyncio.Task] = {}  # this replica's indexing runs, by user
        self._sweep_task: asyncio.Task | None = None
        # Lookup indexes by user: (what they were built from, index); see `lookup`.
        self._item_indexes: OrderedDict[str, tuple[object, ItemIndex]] = OrderedDict()
        self._item_index_lock = asyncio.Lock()

    async def start(self) -> None:
        """Load the embedder, open the index, and start ingesting the local Zotero library
        (if configured) in the background. A failure is kept and reported by `search`."""
        s = self.settings
        try:
            self.embedder = await asyncio.to_thread(Embedder.shared, s.embedding_model, s.embedding_device,
                                                    s.embedding_batch_size)
            self.store = await asyncio.to_thread(open_store, s, self.embedder.dim)
        except Exception as exc:
            self.startup_error = str(exc)
            log.error("retrieval cannot start: %s", exc)
            return
        reranker = None
        if s.reranker_dir is not None:
            try:
                reranker = await asyncio.to_thread(Reranker, s.reranker_dir, s.embedding_device)
            except Exception as exc:  # search still works, unreranked; status says why
                self.reranker_error = str(exc)
                log.error("reranker not loaded, searching without it: %s", exc)
        sparse = SparseEncoder()
        self.searcher = Searcher(self.store, self.embedder, sparse, reranker, s.candidates)
        self.ingestor = Ingestor(self.store, self.embedder, sparse, s.chunk_tokens, s.convert_timeout_s,
                                 s.convert_memory_mb, s.max_pages, optimize_after=s.optimize_after_chunks,
                                 linked_base_dir=s.zotero_base_dir)
        if s.zotero_dir is not None:
            seen = database_signature(s.zotero_dir / "zotero.sqlite")
            self._ingest_task = asyncio.create_task(self.ingest_zotero(s.zotero_dir, s.local_user_id))
            if s.rescan_interval_s > 0:
                self._rescan_task = asyncio.create_task(self._rescan_local_library(s.zotero_dir, seen))
        if self.catalog is not None:
            old = s.store_dir / "hosted.sqlite"  # an older release's per-replica catalog
            if old.exists():
                try:
                    users = await import_old_catalog(self.catalog, old)
                    log.info("imported the hosted catalog of %d users from %s into KV", users, old)
                except Exception as exc:  # noqa: BLE001 - e.g. a replica on the same volume renamed it first
                    log.warning("could not import the old hosted catalog %s: %s", old, exc)
            # finish what stopped or dead replicas left, now and every sweep_s
            self._sweep_task = asyncio.create_task(self._sweep())

    async def _rescan_local_library(self, zotero_dir: Path, seen: tuple) -> None:
        """Ingest the local library again whenever its database changes (papers imported from
        the sidebar, edits, the trash), checked every `rescan_interval_s` after the first ingest."""
        await asyncio.wait({self._ingest_task})
        while not self._closing.is_set():
            try:
                await asyncio.wait_for(self._closing.wait(), self.settings.rescan_interval_s)
                return
            except TimeoutError:
                pass
            now = database_signature(zotero_dir / "zotero.sqlite")
            if now != seen:
                seen = now
                log.info("the Zotero database changed; re-indexing incrementally")
                await self.ingest_zotero(zotero_dir, self.settings.local_user_id)

    async def ingest_zotero(self, zotero_dir: Path, user_id: str) -> IngestProgress:
        """Ingest a Zotero data directory for `user_id` (incremental; one run per user at a time)."""
        if self.ingestor is None:
            raise RuntimeError(f"retrieval is not started: {self.startup_error or 'call start() first'}")
        current = self._progress.get(user_id)
        if current is not None and current.state == "running":
            return current
        progress = IngestProgress(user_id=user_id, source=str(zotero_dir), state="running")
        self._progress[user_id] = progress
        async with self._ingest_lock:
            return await asyncio.to_thread(self.ingestor.ingest_zotero, zotero_dir, user_id, progress)

    # --- the lab-hosted library -------------------------------------------------------------

    def _hosted_refusal(self, user_id: str) -> ServiceError | None:
        if self.catalog is None or self.ingestor is None:
            return ServiceError(code="not_available", service=SERVICE, message=(
                f"The library service is not available: {self.startup_error or 'it is still starting'}"))
        if self.settings.zotero_dir is not None and user_id == self.settings.local_user_id:
            return ServiceError(code="not_available", service=SERVICE, message=(
                f"This account's library is read from the Zotero data directory {self.settings.zotero_dir}; "
                "uploads are for lab-hosted accounts"))
        return None

    async def sync_library(self, request: LibrarySyncRequested) -> LibrarySynced:
        """Store one page of a hosted library's metadata; re-index what it changed."""
        fields = dict(**request.reply_fields(), library_id=request.library_id, sync_id=request.sync_id,
                      page=request.page)
        if (refusal := self._hosted_refusal(request.user_id)) is not None:
            return LibrarySynced(**fields, error=refusal)
        outcome = await self.catalog.apply_sync(request.user_id, request)
        for name in outcome.orphaned_objects:
            await self._delete_object(name)
        if outcome.stored or outcome.deleted:
            await self._kick(request.user_id)
        return LibrarySynced(**fields, stored=outcome.stored, deleted=outcome.deleted,
                             needs_upload=outcome.needs_upload, complete=outcome.complete)

    async def accept_upload(self, request: AttachmentUploaded) -> AttachmentAccepted:
        """Record an uploaded file (claim-check) of a synced attachment and queue it for indexing."""
        fields = dict(**request.reply_fields(), library_id=request.library_id, key=request.key)
        if (refusal := self._hosted_refusal(request.user_id)) is not None:
            return AttachmentAccepted(**fields, error=refusal)
        outcome = await self.catalog.record_upload(request.user_id, request.library_id, request.key,
                                                   request.sha256, request.object_name, request.content_type,
                                                   request.size)
        if not outcome.accepted:
            if outcome.orphaned_object:
                await self._delete_object(outcome.orphaned_object)
            return AttachmentAccepted(**fields, error=ServiceError(code="invalid", service=SERVICE,
                                                                   message=outcome.reason))
        if outcome.replaced_object:
            await self._delete_object(outcome.replaced_object)
        if outcome.unchanged:
            return AttachmentAccepted(**fields, status="unchanged")
        await self._kick(request.user_id)
        return AttachmentAccepted(**fields, status="queued")

    async def _delete_object(self, name: str) -> None:
        if self.files is None:
            return
        try:
            await self.files.delete(name)
        except Exception as exc:  # noqa: BLE001 - an orphaned file costs space, not correctness
            log.warning("could not delete %s from the library bucket: %s", name, exc)

    async def _kick(self, user_id: str) -> None:
        """Bring a hosted user's index in line with their catalog, on whichever replica holds
        (or takes) the user's indexing lease. The catalog's version is raised first: a run
        going anywhere reads it again when it ends, so bursts of uploads coalesce into one
        more run and no change is left behind."""
        await self.catalog.touch(user_id)
        self._start_run(user_id)

    def _start_run(self, user_id: str) -> None:
        running = self._hosted_runs.get(user_id)
        if (running is None or running.done()) and not self._closing.is_set():
            self._hosted_runs[user_id] = asyncio.create_task(self._reconcile(user_id))

    def _running_users(self) -> set[str]:
        return {user for user, task in self._hosted_runs.items() if not task.done()}

    async def _sweep(self) -> None:
        """Take over the libraries whose catalog changed since their last finished run and
        that nobody indexes (a replica stopped or died mid-run), now and every `sweep_s`."""
        while not self._closing.is_set():
            try:
                now = time.time()
                for user_id, run, _ in await self.catalog.pending():
                    # ours without a run going here: a write of ours was lost in a reconnect
                    mine = run.owner == self.instance and user_id not in self._running_users()
                    if mine or not run.held(now, self.lease_s):
                        self._start_run(user_id)
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                log.warning("sweep of hosted libraries failed: %s", exc)
            try:
                await asyncio.wait_for(self._closing.wait(), self.sweep_s)
            except TimeoutError:
                pass

    async def _reconcile(self, user_id: str) -> None:
        """Index the user's library here while its catalog is ahead of the index, holding the
        user's lease; without the lease (another replica runs) there is nothing to do here."""
        while not self._closing.is_set():
            lease = await self.catalog.claim(user_id, self.instance, self.lease_s)
            if lease is None:
                return  # another replica indexes this library and will see the new version
            version = await self.catalog.version(user_id)
            if version <= lease.run.indexed_through:
                await self.catalog.beat(lease, release=True)
            else:
                await self._run_holding(lease, version)
            # Released: a kick that found the lease held raised the version before trying it.
            if self._closing.is_set() or lease.lost or await self.catalog.version(user_id) <= version:
                return

    async def _run_holding(self, lease: Lease, version: int) -> None:
        user_id = lease.user_id
        loop = asyncio.get_running_loop()

        def fetch(src: Source, scratch: Path) -> Path:  # runs in the ingest thread
            return asyncio.run_coroutine_threadsafe(self._fetch(src, scratch), loop).result(FETCH_TIMEOUT_S)

        progress = IngestProgress(user_id=user_id, source="hosted", state="running")
        await self.catalog.beat(lease, _shown(progress))
        ended = asyncio.Event()
        heartbeat = asyncio.create_task(self._beat_while_running(lease, progress, ended))
        try:
            async with self._ingest_lock:
                if self.ingestor is None or self.ingestor.stop.is_set():
                    progress.state = "stopped"
                else:
                    sources, libraries, items = await self.catalog.sources(user_id)
                    known = await self.catalog.failures(user_id)
                    await asyncio.to_thread(self.ingestor.ingest_sources, sources, user_id, progress,
                                            label="hosted", libraries=libraries, items=items, fetch=fetch,
                                            known_failures=known)
                    if progress.state == "done":  # a stopped run saw only part of the library
                        # Conversion failures are kept with their content hash; a missing file is retried.
                        await self.catalog.set_failures(user_id, [f for f in progress.failures if f.content_hash])
        finally:
            ended.set()  # not cancel(): a beat cut off mid-write would leave the lease's revision stale
            await heartbeat
            # Stopped: not indexed through this version, so another replica's sweep takes over.
            finished = progress.state in ("done", "failed")
            await self.catalog.beat(lease, _shown(progress), release=True,
                                    indexed_through=version if finished else None)

    async def _beat_while_running(self, lease: Lease, progress: IngestProgress, ended: asyncio.Event) -> None:
        while True:
            try:
                await asyncio.wait_for(ended.wait(), self.heartbeat_s)
                return
            except TimeoutError:
                pass
            try:
                if not await self.catalog.beat(lease, _shown(progress)):
                    log.warning("lost the indexing lease of %s to another replica", lease.user_id)
                    return
            except Exception as exc:  # noqa: BLE001 - the next beat tries again within the lease
                log.warning("could not renew the indexing lease of %s: %s", lease.user_id, exc)

    async def _fetch(self, src: Source, scratch: Path) -> Path:
        """Copy an uploaded file out of the object store and check it is the one recorded."""
        if self.files is None:
            raise RuntimeError("no object store is connected")
        target = await self.files.download(src.object_name, scratch / f"{src.library_id}-{src.key}")
        digest = await asyncio.to_thread(_sha256_of, target)
        if digest != src.sha256:
            raise ValueError(f"object {src.object_name} holds SHA-256 {digest[:12]}..., "
                             f"the upload recorded {src.sha256[:12]}...")
        return target

    def _evidence(self, tenant: Tenant, request: RetrievalRequested) -> list[EvidenceChunk]:
        """The best passages of the tenant's library, or of each item of the request's scope
        (inside the tenant: an item of another library than the one the request names is not
        searched), best first."""
        if request.scope is None:
            return self.searcher.evidence(tenant, request.query, request.top_k)
        found: list[EvidenceChunk] = []
        for ref in request.scope.items:
            if tenant.library_id in (None, ref.library_id):
                found += self.searcher.evidence(Tenant(tenant.user_id, ref.library_id, ref.item_key),
                                                request.query, request.top_k)
        return sorted(found, key=lambda c: -(c.score or 0.0))[:request.top_k]

    async def search(self, request: RetrievalRequested) -> EvidenceRetrieved:
        """Ranked evidence for the request's user (and library, when it names one)."""
        def refuse(message: str) -> EvidenceRetrieved:
            return EvidenceRetrieved(**request.reply_fields(), error=ServiceError(
                code="not_available", message=message, service=SERVICE))

        if self.searcher is None:
            return refuse(f"Library search is not available: {self.startup_error or 'the service is still starting'}")
        tenant = Tenant(request.user_id, request.library_id)
        try:
            chunks = await asyncio.to_thread(self._evidence, tenant, request)
            if not chunks and await asyncio.to_thread(count_chunks, self.store, tenant) == 0:
                return refuse(await self._not_indexed_message(request.user_id))
        except Exception as exc:
            log.exception("search failed")
            return refuse(f"The library index is not available right now ({type(exc).__name__}: {exc})")
        return EvidenceRetrieved(**request.reply_fields(), chunks=chunks)

    async def lookup(self, request: LibraryLookupRequested) -> LibraryItemsFound:
        """The items of the requesting user's own library that carry the requested identifiers
        or titles: the local Zotero library for the local user, their synced catalog for a
        hosted user, nothing for anyone else (tenancy: an index is built per user)."""
        try:
            index = await self._item_index(request.user_id)
        except Exception as exc:  # noqa: BLE001 - an unreadable library is reported, not raised
            log.warning("library lookup failed: %s", exc)
            return LibraryItemsFound(**request.reply_fields(), error=ServiceError(
                code="not_available", service=SERVICE, message=f"Your library could not be read: {exc}"))
        if index is None:
            return LibraryItemsFound(**request.reply_fields())
        return LibraryItemsFound(**request.reply_fields(), items=index.find(request), searched_items=index.size)

    async def _item_index(self, user_id: str) -> ItemIndex | None:
        """The user's lookup index, rebuilt when the library changed since it was built: the
        local zotero.sqlite's size and mtime, or the revision of a hosted user's last sync page."""
        if self._is_local(user_id):
            zotero_dir = self.settings.zotero_dir

            async def build() -> ItemIndex:
                snap = await asyncio.to_thread(read_library, zotero_dir, self.settings.zotero_base_dir)
                return await asyncio.to_thread(snapshot_index, snap)

            stamp = database_signature(zotero_dir / "zotero.sqlite")
        elif self.catalog is not None and (stamp := await self.catalog.synced_revision(user_id)):
            async def build() -> ItemIndex:
                return await asyncio.to_thread(synced_index, await self.catalog.synced_items(user_id))
        else:
            return None
        async with self._item_index_lock:
            cached = self._item_indexes.get(user_id)
            if cached is None or cached[0] != stamp:
                cached = (stamp, await build())
                self._item_indexes[user_id] = cached
                while len(self._item_indexes) > LOOKUP_INDEXES:
                    self._item_indexes.popitem(last=False)
            self._item_indexes.move_to_end(user_id)
            return cached[1]

    def _is_local(self, user_id: str) -> bool:
        return self.settings.zotero_dir is not None and user_id == self.settings.local_user_id

    async def _shown_progress(self, user_id: str) -> tuple[dict | None, str]:
        """The user's last ingest progress (`_shown` form) and state: the local library's from
        this process, a hosted one's from the catalog, so every replica answers alike."""
        if self._is_local(user_id) or self.catalog is None:
            p = self._progress.get(user_id)
            return (_shown(p), p.state) if p else (None, "idle")
        run, _ = await self.catalog.index_run(user_id)
        p = run.progress
        state = p["state"] if p else "idle"
        if run.held(time.time(), self.lease_s) or await self.catalog.version(user_id) > run.indexed_through:
            state = "running"  # going, or waiting for a replica to take it (a stopped run's too)
        return p, state

    async def _not_indexed_message(self, user_id: str) -> str:
        p, state = await self._shown_progress(user_id)
        if p is None and user_id == self.settings.local_user_id and self.settings.zotero_dir is None:
            return ("No Zotero library was found on this machine: set ZOCRATES_ZOTERO_DIR to your Zotero "
                    "data directory (the folder holding zotero.sqlite) and start again, e.g. "
                    "`ZOCRATES_ZOTERO_DIR=~/Zotero make run`.")
        if p is None:
            return "Your library is not indexed yet: no library has been synced for this account."
        if state == "running":
            return (f"Your library is not indexed yet: {p['sources_done']} of {p['sources_total']} "
                    "attachments done.")
        if state == "failed":
            return f"Indexing your library failed: {p['error']}"
        failed = p["failures_total"]
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(p["failures_by_reason"].items()))
        return ("Your library has no searchable text yet"
                + (f": {failed} of {p['sources_total']} attachments could not be read ({reasons})."
                   if failed else "."))

    def health(self) -> dict:
        """The answer to `health.retrieval`: up, and where the local library is read from, so
        that `GET /health` and `make run`'s banner can say when it is the bundled demo."""
        s = self.settings
        library: dict = {"source": s.library_source, "zotero_dir": str(s.zotero_dir) if s.zotero_dir else None}
        if library["source"] == "demo":
            library["papers"] = demo_papers(s.zotero_dir)
        return {"status": "ok", "library": library}

    def status(self, user_id: str) -> dict:
        """The local library's ingest progress and the user's index summary (the CLI's view;
        GET /library/status, hosted libraries included, is `library_status`)."""
        p = self._progress.get(user_id)
        out: dict = {
            "user_id": user_id,
            "source": self.settings.library_source if self._is_local(user_id) else "none",
            "hosted": None,
            "ready": self.searcher is not None,
            "error": self.startup_error,
            "reranker_error": self.reranker_error,
            "state": p.state if p else "idle",
            "ingest": _shown(p) if p else None,
            "chunks_indexed": None,
        }
        if self.store is not None:
            try:
                out["chunks_indexed"] = count_chunks(self.store, Tenant(user_id))
            except Exception as exc:
                out["error"] = f"index not readable: {exc}"
        return out

    async def _status(self, user_id: str) -> dict:
        """`status()`, with a hosted library's catalog counts, progress and failures from KV."""
        out = await asyncio.to_thread(self.status, user_id)
        if self._is_local(user_id) or self.catalog is None or not await self.catalog.has_library(user_id):
            return out
        counts = await self.catalog.counts(user_id)
        progress, state = await self._shown_progress(user_id)
        if progress is None:  # imported from an older release, not run since: what failed then
            failures = await self.catalog.failures(user_id)
            progress = {"failures": [asdict(f) for f in failures[:MAX_STATUS_FAILURES]],
                        "failures_by_reason": dict(Counter(f.reason for f in failures))}
        out.update(source="hosted", hosted=asdict(counts), state=state, ingest=progress)
        return out

    async def rescan(self, user_id: str) -> None:
        """Index the user's library again now, incrementally: the local Zotero library (after
        the ingest that may be running, which may have read the database before the change),
        or a hosted one (reconciled against its catalog). No library: nothing to do."""
        if self.ingestor is None:
            return
        if self._is_local(user_id):
            if self._local_rescan is None or self._local_rescan.done():
                self._local_rescan = asyncio.create_task(self._ingest_local_after_current(self.settings.zotero_dir))
        elif self.catalog is not None and await self.catalog.has_library(user_id):
            await self._kick(user_id)

    async def _ingest_local_after_current(self, zotero_dir: Path) -> None:
        user_id = self.settings.local_user_id
        while (p := self._progress.get(user_id)) is not None and p.state == "running":
            if self._closing.is_set():
                return
            await asyncio.sleep(0.1)
        await self.ingest_zotero(zotero_dir, user_id)

    async def library_status(self, request: LibraryStatusRequested) -> LibraryStatus:
        """The requesting user's library status as the bus reply (after starting a rescan, if asked)."""
        if request.rescan:
            await self.rescan(request.user_id)
            await asyncio.sleep(0)  # let the run start, so the answer already says "running"
        st = await self._status(request.user_id)
        ingest, hosted = st["ingest"] or {}, st["hosted"] or {}
        failures = [IngestFailure(**{k: f[k] for k in IngestFailure.model_fields if k in f})
                    for f in ingest.get("failures", [])]
        error = st["error"] or (ingest.get("error") if st["state"] == "failed" else None)
        last_sync = hosted.get("last_sync_at")
        return LibraryStatus(
            **request.reply_fields(), source=st["source"], state=st["state"], ready=st["ready"],
            items=hosted.get("items", ingest.get("items", 0)), attachments=hosted.get("attachments", ingest.get("attachments", 0)),
            uploaded=hosted.get("uploaded", 0), awaiting_upload=hosted.get("awaiting_upload", 0),
            sources_total=ingest.get("sources_total", 0), sources_done=ingest.get("sources_done", 0),
            indexed=ingest.get("indexed", 0) + ingest.get("unchanged", 0), chunks_indexed=st["chunks_indexed"],
            failures_by_reason=ingest.get("failures_by_reason", {}), failures=failures[:MAX_STATUS_FAILURES],
            last_sync_at=datetime.fromtimestamp(last_sync, UTC) if last_sync else None,
            error=ServiceError(code="not_available", service=SERVICE, message=error) if error else None)

    async def close(self) -> None:
        """Stop a running ingest at the next file and close the index."""
        self._closing.set()
        if self.ingestor is not None:
            self.ingestor.stop.set()
        for task in [self._ingest_task, self._rescan_task, self._local_rescan, self._sweep_task,
                     *self._hosted_runs.values()]:
            if task is None:
                continue
            try:
                await task
            except Exception:
                log.exception("background ingest ended with an error")
        if self.store is not None:
            await asyncio.to_thread(self.store.close)
            self.store = None
        self.searcher = None


def _shown(progress: IngestProgress) -> dict:
    """A run's progress as status shows it: every failure counted, the first few listed."""
    shown = progress.as_dict()
    shown["failures_total"] = len(shown["failures"])
    shown["failures"] = shown["failures"][:MAX_STATUS_FAILURES]
    return shown


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
