"""The retrieval service's entry point for the bus wiring: start, search, status, close.

Blocking work (loading the model, opening the index, ingesting, embedding a query) runs in
threads so the event loop keeps serving other requests. The service never answers with
invented data: when it cannot search (nothing indexed yet for this user, index or model not
available) it says so in `EvidenceRetrieved.error` with `code="not_available"`.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from zocrates_contracts import EvidenceRetrieved, RetrievalRequested, ServiceError
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.embed import Embedder, Reranker
from zocrates_retrieval.ingest import IngestProgress, Ingestor
from zocrates_retrieval.search import Searcher, to_evidence
from zocrates_retrieval.store import ChunkStore, EdgeStore, ServerStore, SparseEncoder, Tenant, count_chunks

log = logging.getLogger(__name__)
SERVICE = "retrieval"


def open_store(settings: RetrievalSettings, dim: int) -> ChunkStore:
    """The index the settings name: embedded (qdrant-edge) or a Qdrant server."""
    if settings.qdrant_mode == "server":
        key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
        return ServerStore.connect(settings.qdrant_url, key, settings.collection, dim)
    return EdgeStore(settings.store_dir / "edge" / settings.collection, dim)


class RetrievalService:
    """Library ingest and hybrid search for every user; one instance per process."""

    def __init__(self, settings: RetrievalSettings):
        self.settings = settings
        self.embedder: Embedder | None = None
        self.store: ChunkStore | None = None
        self.searcher: Searcher | None = None
        self.ingestor: Ingestor | None = None
        self.startup_error: str | None = None
        self.reranker_error: str | None = None
        self._progress: dict[str, IngestProgress] = {}
        self._ingest_task: asyncio.Task | None = None

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
                                 s.convert_memory_mb, s.max_pages)
        if s.zotero_dir is not None:
            self._ingest_task = asyncio.create_task(self.ingest_zotero(s.zotero_dir, s.local_user_id))

    async def ingest_zotero(self, zotero_dir: Path, user_id: str) -> IngestProgress:
        """Ingest a Zotero data directory for `user_id` (incremental; one run per user at a time)."""
        if self.ingestor is None:
            raise RuntimeError(f"retrieval is not started: {self.startup_error or 'call start() first'}")
        current = self._progress.get(user_id)
        if current is not None and current.state == "running":
            return current
        progress = IngestProgress(user_id=user_id, source=str(zotero_dir), state="running")
        self._progress[user_id] = progress
        return await asyncio.to_thread(self.ingestor.ingest_zotero, zotero_dir, user_id, progress)

    async def search(self, request: RetrievalRequested) -> EvidenceRetrieved:
        """Ranked evidence for the request's user (and library, when it names one)."""
        def refuse(message: str) -> EvidenceRetrieved:
            return EvidenceRetrieved(**request.reply_fields(), error=ServiceError(
                code="not_available", message=message, service=SERVICE))

        if self.searcher is None:
            return refuse(f"Library search is not available: {self.startup_error or 'the service is still starting'}")
        tenant = Tenant(request.user_id, request.library_id)
        try:
            hits = await asyncio.to_thread(self.searcher.search, tenant, request.query, request.top_k)
            if not hits and await asyncio.to_thread(count_chunks, self.store, tenant) == 0:
                return refuse(self._not_indexed_message(request.user_id))
        except Exception as exc:
            log.exception("search failed")
            return refuse(f"The library index is not available right now ({type(exc).__name__}: {exc})")
        return EvidenceRetrieved(**request.reply_fields(), chunks=[to_evidence(h) for h in hits])

    def _not_indexed_message(self, user_id: str) -> str:
        p = self._progress.get(user_id)
        if p is None:
            return "Your library is not indexed yet: no library has been synced for this account."
        if p.state == "running":
            return (f"Your library is not indexed yet: {p.sources_done} of {p.sources_total} "
                    "attachments done.")
        if p.state == "failed":
            return f"Indexing your library failed: {p.error}"
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(p.failures_by_reason().items()))
        return ("Your library has no searchable text yet"
                + (f": {len(p.failures)} of {p.sources_total} attachments could not be read ({reasons})."
                   if p.failures else "."))

    def status(self, user_id: str) -> dict:
        """Ingest progress and index summary for GET /library/status."""
        p = self._progress.get(user_id)
        out: dict = {
            "user_id": user_id,
            "ready": self.searcher is not None,
            "error": self.startup_error,
            "reranker_error": self.reranker_error,
            "state": p.state if p else "idle",
            "ingest": p.as_dict() if p else None,
            "chunks_indexed": None,
        }
        if self.store is not None:
            try:
                out["chunks_indexed"] = count_chunks(self.store, Tenant(user_id))
            except Exception as exc:
                out["error"] = f"index not readable: {exc}"
        return out

    async def close(self) -> None:
        """Stop a running ingest at the next file and close the index."""
        if self.ingestor is not None:
            self.ingestor.stop.set()
        if self._ingest_task is not None:
            try:
                await self._ingest_task
            except Exception:
                log.exception("background ingest ended with an error")
        if self.store is not None:
            await asyncio.to_thread(self.store.close)
            self.store = None
        self.searcher = None
