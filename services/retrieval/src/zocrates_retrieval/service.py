"""The retrieval service's entry point for the bus wiring: start, search, lookup, outline,
status, close, and the lab-hosted library (sync pages, uploaded files) that feeds the same ingest.

Each request is a short method here; what it does lives in plain modules: `search`, `scope`,
`lookup`, `status`, `ingest`, and for hosted libraries the catalog in KV (`catalog`), the
uploaded files (`files`) and the indexing runs under a lease (`indexing`).

Blocking work (loading the model, opening the index, ingesting, embedding a query) runs in
threads so the event loop keeps serving other requests. The service never answers with
invented data: when it cannot search (nothing indexed yet for this user, index or model not
available) it says so in `EvidenceRetrieved.error` with `code="not_available"`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog

from zocrates_contracts import (
    AttachmentAccepted,
    AttachmentUploaded,
    EvidenceRetrieved,
    LibraryItemsFound,
    LibraryLookupRequested,
    LibraryOutline,
    LibraryOutlineRequested,
    LibraryStatus,
    LibraryStatusRequested,
    LibrarySynced,
    LibrarySyncRequested,
    RetrievalRequested,
    ServiceError,
    TurnResolved,
)
from zocrates_retrieval import scope, status
from zocrates_retrieval.adapters.catalog import Catalog
from zocrates_retrieval.adapters.embed import Embedder, Reranker
from zocrates_retrieval.adapters.files import LibraryFiles
from zocrates_retrieval.adapters.store import (
    ChunkStore,
    EdgeStore,
    Narrowing,
    ServerStore,
    SparseEncoder,
    Tenant,
    count_chunks,
)
from zocrates_retrieval.adapters.zotero import read_library
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.domain.priority import ItemRef
from zocrates_retrieval.indexing import HostedIndexer
from zocrates_retrieval.ingest import Ingestor, IngestProgress
from zocrates_retrieval.lookup import IndexCache, LibraryView, snapshot_index, synced_index
from zocrates_retrieval.search import Searcher
from zocrates_runtime.zotero_dir import demo_papers
from zocrates_runtime.zotero_snapshot import database_signature

log = structlog.get_logger(__name__)
SERVICE = status.SERVICE


def open_store(settings: RetrievalSettings, dim: int) -> ChunkStore:
    """The index the settings name: embedded (qdrant-edge) or a Qdrant server."""
    if settings.qdrant_mode == "server":
        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return ServerStore.connect(settings.qdrant_url, key, settings.collection, dim)
    return EdgeStore(settings.store_dir / "edge" / settings.collection, dim)


class RetrievalService:
    """Library ingest and hybrid search for every user; one instance per process."""

    def __init__(self, settings: RetrievalSettings, files: LibraryFiles | None = None, catalog: Catalog | None = None):
        self.settings = settings
        self.files = files  # the uploaded files of hosted libraries (set by the bus wiring)
        self.catalog = catalog  # the hosted libraries' catalog in KV (set by the bus wiring)
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
        self.indexer = HostedIndexer(self._ingest_lock, self._closing, lambda: self.ingestor, self.recently_cited)
        self._sweep_task: asyncio.Task | None = None
        self._views = IndexCache()  # lookup indexes and outlines by user

    # This replica's name in the indexing leases and their timing (tests shorten it).
    instance = property(lambda self: self.indexer.instance)
    lease_s = property(lambda self: self.indexer.lease_s, lambda self, value: setattr(self.indexer, "lease_s", value))
    heartbeat_s = property(
        lambda self: self.indexer.heartbeat_s, lambda self, value: setattr(self.indexer, "heartbeat_s", value)
    )
    sweep_s = property(lambda self: self.indexer.sweep_s, lambda self, value: setattr(self.indexer, "sweep_s", value))
    _hosted_runs = property(lambda self: self.indexer.runs)  # this replica's runs, by user

    # --- life cycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the embedder, open the index, and start ingesting the local Zotero library
        (if configured) in the background. A failure is kept and reported by `search`."""
        s = self.settings
        try:
            self.embedder = await asyncio.to_thread(
                Embedder.shared, s.embedding_model, s.embedding_device, s.embedding_batch_size, s.embedding_precision
            )
            self.store = await asyncio.to_thread(open_store, s, self.embedder.dim)
        except Exception as exc:
            self.startup_error = str(exc)
            log.error("retrieval cannot start", error=str(exc))
            return
        reranker = None
        if s.reranker_dir is not None:
            try:
                reranker = await asyncio.to_thread(Reranker, s.reranker_dir, self.embedder.device)
            except Exception as exc:  # search still works, unreranked; status says why
                self.reranker_error = str(exc)
                log.error("reranker not loaded, searching without it", error=str(exc))
        sparse = SparseEncoder()
        self.searcher = Searcher(self.store, self.embedder, sparse, reranker, s.candidates)
        self.ingestor = Ingestor(
            self.store,
            self.embedder,
            sparse,
            s.chunk_tokens,
            s.convert_timeout_s,
            s.convert_memory_mb,
            s.max_pages,
            optimize_after=s.optimize_after_chunks,
            linked_base_dir=s.zotero_base_dir,
            recent_days=s.recent_days,
            convert_workers=s.convert_workers,
        )
        if s.zotero_dir is not None:
            seen = database_signature(s.zotero_dir / "zotero.sqlite")
            self._ingest_task = asyncio.create_task(self.ingest_zotero(s.zotero_dir, s.local_user_id))
            if s.rescan_interval_s > 0:
                self._rescan_task = asyncio.create_task(self._rescan_local_library(s.zotero_dir, seen))
        if self.catalog is not None:
            self.indexer.catalog, self.indexer.files = self.catalog, self.files
            # finish what stopped or dead replicas left, now and every sweep_s
            self._sweep_task = asyncio.create_task(self.indexer.sweep())

    async def close(self) -> None:
        """Stop a running ingest at the next file and close the index."""
        self._closing.set()
        if self.ingestor is not None:
            self.ingestor.stop.set()
        for task in [
            self._ingest_task,
            self._rescan_task,
            self._local_rescan,
            self._sweep_task,
            *self.indexer.runs.values(),
        ]:
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

    def health(self) -> dict:
        """The answer to `health.retrieval`: up, and where the local library is read from, so
        that `GET /health` and `make run`'s banner can say when it is the bundled demo."""
        s = self.settings
        library: dict = {"source": s.library_source, "zotero_dir": str(s.zotero_dir) if s.zotero_dir else None}
        if library["source"] == "demo":
            library["papers"] = demo_papers(s.zotero_dir)
        return {"status": "ok", "library": library, **self._device_health()}

    def _device_health(self) -> dict:
        """Where the embedding model runs, in the verifier's terms: `device`, and
        `cpu_fallbacks` by model (`count` 1 and `last_reason` when a requested accelerator
        failed the probe and cpu took its place); `precision` (float32, bfloat16 or int8), and
        `int8_failure` when `auto` chose int8 and its model did not load; `rejected`: why each
        better candidate was not chosen (for `auto`, those absent on this machine). Nothing
        before the model is loaded."""
        if self.embedder is None:
            return {}
        choice = self.embedder.device_choice
        reason = choice.fallback_reason(self.embedder.requested_device)
        return {
            "device": choice.device,
            "precision": self.embedder.precision,
            "cpu_fallbacks": {self.embedder.name: {"count": int(reason is not None), "last_reason": reason}},
            "rejected": dict(choice.rejected),
        } | ({"int8_failure": self.embedder.int8_failure} if self.embedder.int8_failure else {})

    # --- search and lookup ------------------------------------------------------------------

    async def search(self, request: RetrievalRequested) -> EvidenceRetrieved:
        """Ranked evidence for the request's user (and library, when it names one), within the
        request's scope; a scope that holds nothing indexed says so (`scope_empty`)."""

        def refuse(message: str) -> EvidenceRetrieved:
            return EvidenceRetrieved(
                **request.reply_fields(), error=ServiceError(code="not_available", message=message, service=SERVICE)
            )

        if self.searcher is None:
            return refuse(f"Library search is not available: {self.startup_error or 'the service is still starting'}")
        tenant = Tenant(request.user_id, request.library_id)
        try:
            within = await self._narrowings(request)
            chunks = await asyncio.to_thread(
                self.searcher.evidence,
                tenant,
                request.query,
                request.top_k,
                within=within,
                back_matter=request.back_matter,
            )
            if not chunks and await asyncio.to_thread(count_chunks, self.store, tenant) == 0:
                progress, state = await self._progress_of(request.user_id)
                no_local_library = request.user_id == self.settings.local_user_id and self.settings.zotero_dir is None
                return refuse(status.not_indexed_message(progress, state, no_local_library))
            if not chunks and within is not None and await asyncio.to_thread(self._count_within, tenant, within) == 0:
                return EvidenceRetrieved(**request.reply_fields(), scope_empty=True)
        except Exception as exc:
            log.exception("search failed")
            return refuse(f"The library index is not available right now ({type(exc).__name__}: {exc})")
        return EvidenceRetrieved(**request.reply_fields(), chunks=chunks)

    async def _narrowings(self, request: RetrievalRequested) -> list[Narrowing] | None:
        """The parts of the index the request's scope means (None: the whole tenant); a
        collection with its subcollections is expanded from the library's outline."""
        if request.scope is None:
            return None
        outline = None
        if scope.needs_outline(request.scope):
            view = await self._library_view(request.user_id)
            outline = view.outline if view is not None else None
        return scope.narrowings(request.scope, outline)

    def _count_within(self, tenant: Tenant, within: list[Narrowing]) -> int:
        return sum(count_chunks(self.store, tenant, n) for n in within)

    async def lookup(self, request: LibraryLookupRequested) -> LibraryItemsFound:
        """The items of the requesting user's own library that carry the requested identifiers
        or titles: the local Zotero library for the local user, their synced catalog for a
        hosted user, nothing for anyone else (tenancy: an index is built per user)."""
        view, error = await self._readable_view(request.user_id, "lookup")
        if error is not None:
            return LibraryItemsFound(**request.reply_fields(), error=error)
        if view is None:
            return LibraryItemsFound(**request.reply_fields())
        index = view.items
        return LibraryItemsFound(**request.reply_fields(), items=index.find(request), searched_items=index.size)

    async def outline(self, request: LibraryOutlineRequested) -> LibraryOutline:
        """The requesting user's libraries with their collections or their tags (what a
        question's scope may name): the local Zotero library's, or a hosted one's as synced."""
        view, error = await self._readable_view(request.user_id, "outline")
        if error is not None:
            return LibraryOutline(**request.reply_fields(), error=error)
        return scope.outline_reply(request, view.outline if view is not None else None)

    async def _readable_view(self, user_id: str, what: str) -> tuple[LibraryView | None, ServiceError | None]:
        """`_library_view`, or the error that says the library could not be read (reported to
        the user, not raised)."""
        try:
            return await self._library_view(user_id), None
        except Exception as exc:  # noqa: BLE001 - an unreadable library is reported, not raised
            log.warning(f"library {what} failed", error=str(exc))
            message = f"Your library could not be read: {exc}"
            return None, ServiceError(code="not_available", service=SERVICE, message=message)

    async def _library_view(self, user_id: str) -> LibraryView | None:
        """The user's lookup index and outline, rebuilt when the library changed since they
        were built: the local zotero.sqlite's size and mtime, or the revision of a hosted
        user's last sync page. None: no library of this user is here."""
        if self._is_local(user_id):
            zotero_dir = self.settings.zotero_dir

            async def build() -> LibraryView:
                snap = await asyncio.to_thread(read_library, zotero_dir, self.settings.zotero_base_dir)
                return LibraryView(
                    await asyncio.to_thread(snapshot_index, snap), await asyncio.to_thread(scope.snapshot_outline, snap)
                )

            stamp = database_signature(zotero_dir / "zotero.sqlite")
        elif self.catalog is not None and (stamp := await self.catalog.synced_revision(user_id)):

            async def build() -> LibraryView:
                items, trees = await asyncio.gather(
                    self.catalog.synced_items(user_id), self.catalog.collection_trees(user_id)
                )
                return LibraryView(
                    await asyncio.to_thread(synced_index, items),
                    await asyncio.to_thread(scope.synced_outline, items, trees),
                )
        else:
            return None
        return await self._views.get(user_id, stamp, build)

    # --- status -----------------------------------------------------------------------------

    def status(self, user_id: str) -> dict:
        """The local library's ingest progress and the user's index summary, in this process
        (GET /library/status, hosted libraries included, is `library_status`)."""
        p = self._progress.get(user_id)
        out: dict = {
            "user_id": user_id,
            "source": self.settings.library_source if self._is_local(user_id) else "none",
            "hosted": None,
            "ready": self.searcher is not None,
            "error": self.startup_error,
            "reranker_error": self.reranker_error,
            "state": p.state if p else "idle",
            "ingest": status.shown(p) if p else None,
            "chunks_indexed": None,
        }
        if self.store is not None:
            try:
                out["chunks_indexed"] = count_chunks(self.store, Tenant(user_id))
            except Exception as exc:
                out["error"] = f"index not readable: {exc}"
        return out

    async def library_status(self, request: LibraryStatusRequested) -> LibraryStatus:
        """The requesting user's library status as the bus reply (after starting a rescan, if
        asked): a hosted library's catalog counts, progress and failures from KV."""
        if request.rescan:
            await self.rescan(request.user_id)
            await asyncio.sleep(0)  # let the run start, so the answer already says "running"
        user_id = request.user_id
        here = await asyncio.to_thread(self.status, user_id)
        source, progress, state, counts = here["source"], here["ingest"], here["state"], None
        if await self._is_hosted(user_id):
            source, counts = "hosted", await self.catalog.counts(user_id)
            progress, state = await status.hosted_progress(self.catalog, user_id, self.indexer.lease_s)
        return status.library_status(
            request,
            source=source,
            state=state,
            ready=here["ready"],
            error=here["error"],
            progress=progress,
            counts=counts,
            chunks_indexed=here["chunks_indexed"],
        )

    async def _progress_of(self, user_id: str) -> tuple[dict | None, str]:
        """The user's last ingest progress (`status.shown` form) and state: the local library's
        from this process, a hosted one's from the catalog, so every replica answers alike."""
        if self._is_local(user_id) or self.catalog is None:
            p = self._progress.get(user_id)
            return (status.shown(p), p.state) if p else (None, "idle")
        return await status.hosted_progress(self.catalog, user_id, self.indexer.lease_s)

    def _is_local(self, user_id: str) -> bool:
        return self.settings.zotero_dir is not None and user_id == self.settings.local_user_id

    async def _is_hosted(self, user_id: str) -> bool:
        """Whether the user ever synced a library here (not the local account)."""
        return not self._is_local(user_id) and self.catalog is not None and await self.catalog.has_library(user_id)

    # --- the items cited in answers (their files are converted early) ----------------------

    async def note_citations(self, message: TurnResolved) -> None:
        """Keep the items a finished turn cited as the user's most recently cited (in the
        catalog, shared by every replica): the user's next indexing run converts their files
        right after the recently changed ones, and a run of the user's going on here converts
        the ones still waiting next."""
        refs = list(dict.fromkeys((s.library_id, s.item_key) for s in message.record.references.cited))
        if not refs:
            return
        if self.ingestor is not None:
            self.ingestor.cited(message.user_id, refs)
        if self.catalog is not None:
            await self.catalog.note_cited(message.user_id, refs, message.record.completed_at.timestamp())

    async def recently_cited(self, user_id: str) -> list[ItemRef]:
        """The items cited in the user's recent answers, the most recent first; none when they
        cannot be read (the files are then converted without them, not left waiting)."""
        if self.catalog is None:
            return []
        try:
            return await self.catalog.recently_cited(user_id)
        except Exception as exc:  # noqa: BLE001 - an order, not a correctness matter
            log.warning("recently cited items not read; indexing without them", user_id=user_id, error=str(exc))
            return []

    # --- the local library ------------------------------------------------------------------

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
            cited = await self.recently_cited(user_id)
            return await asyncio.to_thread(self.ingestor.ingest_zotero, zotero_dir, user_id, progress, cited=cited)

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

    # --- the lab-hosted library -------------------------------------------------------------

    async def sync_library(self, request: LibrarySyncRequested) -> LibrarySynced:
        """Store one page of a hosted library's metadata; re-index what it changed."""
        fields = dict(
            **request.reply_fields(), library_id=request.library_id, sync_id=request.sync_id, page=request.page
        )
        if (refusal := self._hosted_refusal(request.user_id)) is not None:
            return LibrarySynced(**fields, error=refusal)
        outcome = await self.catalog.apply_sync(request.user_id, request)
        for name in outcome.orphaned_objects:
            await self._delete_object(name)
        if outcome.stored or outcome.deleted:
            await self._kick(request.user_id)
        return LibrarySynced(
            **fields,
            stored=outcome.stored,
            deleted=outcome.deleted,
            needs_upload=outcome.needs_upload,
            complete=outcome.complete,
        )

    async def accept_upload(self, request: AttachmentUploaded) -> AttachmentAccepted:
        """Record an uploaded file (claim-check) of a synced attachment and queue it for indexing."""
        fields = dict(**request.reply_fields(), library_id=request.library_id, key=request.key)
        if (refusal := self._hosted_refusal(request.user_id)) is not None:
            return AttachmentAccepted(**fields, error=refusal)
        outcome = await self.catalog.record_upload(
            request.user_id,
            request.library_id,
            request.key,
            request.sha256,
            request.object_name,
            request.content_type,
            request.size,
        )
        if not outcome.accepted:
            if outcome.orphaned_object:
                await self._delete_object(outcome.orphaned_object)
            return AttachmentAccepted(
                **fields, error=ServiceError(code="invalid", service=SERVICE, message=outcome.reason)
            )
        if outcome.replaced_object:
            await self._delete_object(outcome.replaced_object)
        if outcome.unchanged:
            return AttachmentAccepted(**fields, status="unchanged")
        await self._kick(request.user_id)
        return AttachmentAccepted(**fields, status="queued")

    def _hosted_refusal(self, user_id: str) -> ServiceError | None:
        if self.catalog is None or self.ingestor is None:
            return ServiceError(
                code="not_available",
                service=SERVICE,
                message=(f"The library service is not available: {self.startup_error or 'it is still starting'}"),
            )
        if self._is_local(user_id):
            return ServiceError(
                code="not_available",
                service=SERVICE,
                message=(
                    f"This account's library is read from the Zotero data directory {self.settings.zotero_dir}; "
                    "uploads are for lab-hosted accounts"
                ),
            )
        return None

    async def _kick(self, user_id: str) -> None:
        """Index the hosted user's library again (see `HostedIndexer.kick`)."""
        await self.indexer.kick(user_id)

    async def _delete_object(self, name: str) -> None:
        if self.files is None:
            return
        try:
            await self.files.delete(name)
        except Exception as exc:  # noqa: BLE001 - an orphaned file costs space, not correctness
            log.warning("could not delete a file from the library bucket", object_name=name, error=str(exc))
