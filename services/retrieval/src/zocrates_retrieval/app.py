"""The retrieval service on the bus: `RetrievalRequested` in, ranked `EvidenceRetrieved` out;
`LibraryLookupRequested` (is this DOI, arXiv id, PMID or title in my library?) in,
`LibraryItemsFound` out; `LibraryOutlineRequested` (my collections, my tags) in, `LibraryOutline`
out; and the lab-hosted library: sync pages, uploaded files (claim-checks), status. It also
reads every `TurnResolved` for the items the turn cited (their files are indexed early)."""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import (
    AttachmentUploaded,
    LibraryLookupRequested,
    LibraryOutlineRequested,
    LibraryStatusRequested,
    LibrarySyncRequested,
    RetrievalRequested,
    TurnResolved,
)
from zocrates_contracts.subjects import (
    LIBRARY_BUCKET,
    LIBRARY_LOOKUP_CONSUMER,
    LIBRARY_OUTLINE_CONSUMER,
    LIBRARY_STATUS_CONSUMER,
    LIBRARY_SYNC_CONSUMER,
    LIBRARY_UPLOAD_CONSUMER,
    RETRIEVAL_CONSUMER,
    TURN_CITED_CONSUMER,
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
    bus.answer_requests(
        broker,
        "retrieval",
        service,
        {
            RetrievalRequested: bus.Answer(RETRIEVAL_CONSUMER, "search", ack_wait=5.0),
            # One worker: pages of a sync are applied in the order they were published.
            LibrarySyncRequested: bus.Answer(LIBRARY_SYNC_CONSUMER, "sync_library", max_workers=1, ack_wait=10.0),
            AttachmentUploaded: bus.Answer(LIBRARY_UPLOAD_CONSUMER, "accept_upload", ack_wait=10.0),
            LibraryStatusRequested: bus.Answer(LIBRARY_STATUS_CONSUMER, "library_status", ack_wait=10.0),
            LibraryLookupRequested: bus.Answer(LIBRARY_LOOKUP_CONSUMER, "lookup", ack_wait=5.0),
            LibraryOutlineRequested: bus.Answer(LIBRARY_OUTLINE_CONSUMER, "outline", ack_wait=5.0),
            # An event, not a request: nobody waits for it, and nothing is replied.
            TurnResolved: bus.Answer(TURN_CITED_CONSUMER, "note_citations", ack_wait=10.0),
        },
    )

    async def start() -> None:
        js = broker.config.connection_state.stream
        if getattr(service, "files", "absent") is None:  # the real service: connect its file store
            from zocrates_retrieval.adapters.files import LibraryFiles

            service.files = LibraryFiles(js, LIBRARY_BUCKET)
        if getattr(service, "catalog", "absent") is None:  # and the catalog every replica shares
            from zocrates_retrieval.adapters.catalog import Catalog

            service.catalog = await Catalog.open(js, settings.stream_replicas)
        await service.start()

    bus.health_responder(broker, "retrieval", service.health, settings.instance_id)
    return service_app(broker, on_start=start, on_stop=service.close, settings=settings)
