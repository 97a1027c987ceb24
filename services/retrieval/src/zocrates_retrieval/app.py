"""The retrieval service on the bus: `RetrievalRequested` in, ranked `EvidenceRetrieved` out;
`LibraryLookupRequested` (is this DOI, arXiv id, PMID or title in my library?) in,
`LibraryItemsFound` out; `LibraryOutlineRequested` (my collections, my tags) in, `LibraryOutline`
out; and the lab-hosted library: sync pages, uploaded files (claim-checks), status."""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import (
    AttachmentUploaded,
    LibraryLookupRequested,
    LibraryOutlineRequested,
    LibraryStatusRequested,
    LibrarySyncRequested,
    RetrievalRequested,
)
from zocrates_contracts.subjects import (
    LIBRARY_BUCKET,
    LIBRARY_LOOKUP_CONSUMER,
    LIBRARY_OUTLINE_CONSUMER,
    LIBRARY_STATUS_CONSUMER,
    LIBRARY_SYNC_CONSUMER,
    LIBRARY_UPLOAD_CONSUMER,
    RETRIEVAL_CONSUMER,
)
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings


def create_app(settings: ZocratesSettings, service=None) -> FastStream:
    if service is None:
        from zocrates_retrieval.config import RetrievalSettings
        from zocrates_retrieval.service import RetrievalService

        service = RetrievalService(RetrievalSettings())
    broker = bus.make_broker(settings)

    # AckWait is at most half the gateway's deadline for each request (retrieval 20 s, library
    # 30 s), so a job of a killed replica is redelivered while its caller still waits; the
    # in-progress heartbeats keep slower jobs from being redelivered.
    @bus.request_consumer(
        broker, RetrievalRequested, durable=RETRIEVAL_CONSUMER, service="retrieval", max_workers=4, ack_wait=5.0
    )
    async def on_retrieval(request: RetrievalRequested):
        """Hybrid search of the caller's library (tenant = user, library)."""
        return await service.search(request)

    # One worker: pages of a sync are applied in the order they were published.
    @bus.request_consumer(
        broker, LibrarySyncRequested, durable=LIBRARY_SYNC_CONSUMER, service="retrieval", max_workers=1, ack_wait=10.0
    )
    async def on_library_sync(request: LibrarySyncRequested):
        """Store a page of a hosted library's metadata; answer which files to upload."""
        return await service.sync_library(request)

    @bus.request_consumer(
        broker, AttachmentUploaded, durable=LIBRARY_UPLOAD_CONSUMER, service="retrieval", max_workers=4, ack_wait=10.0
    )
    async def on_upload(request: AttachmentUploaded):
        """Record an uploaded attachment file and queue it for indexing."""
        return await service.accept_upload(request)

    @bus.request_consumer(
        broker,
        LibraryStatusRequested,
        durable=LIBRARY_STATUS_CONSUMER,
        service="retrieval",
        max_workers=4,
        ack_wait=10.0,
    )
    async def on_status(request: LibraryStatusRequested):
        """Ingest progress of the caller's library."""
        return await service.library_status(request)

    @bus.request_consumer(
        broker,
        LibraryLookupRequested,
        durable=LIBRARY_LOOKUP_CONSUMER,
        service="retrieval",
        max_workers=4,
        ack_wait=5.0,
    )
    async def on_lookup(request: LibraryLookupRequested):
        """Which items of the caller's own library carry these identifiers or this title."""
        return await service.lookup(request)

    @bus.request_consumer(
        broker,
        LibraryOutlineRequested,
        durable=LIBRARY_OUTLINE_CONSUMER,
        service="retrieval",
        max_workers=4,
        ack_wait=5.0,
    )
    async def on_outline(request: LibraryOutlineRequested):
        """The caller's libraries with their collections or tags (what a scope may name)."""
        return await service.outline(request)

    async def start() -> None:
        js = broker.config.connection_state.stream
        if getattr(service, "files", "absent") is None:  # the real service: connect its file store
            from zocrates_retrieval.adapters.files import LibraryFiles

            service.files = LibraryFiles(js, LIBRARY_BUCKET)
        if getattr(service, "catalog", "absent") is None:  # and the catalog every replica shares
            from zocrates_retrieval.adapters.catalog import Catalog

            service.catalog = await Catalog.open(js, settings.stream_replicas)
        await service.start()

    bus.health_responder(broker, "retrieval", service.health)
    return service_app(broker, on_start=start, on_stop=service.close, replicas=settings.stream_replicas)
