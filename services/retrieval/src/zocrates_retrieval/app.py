"""The retrieval service on the bus: `RetrievalRequested` in, ranked `EvidenceRetrieved` out."""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import RetrievalRequested
from zocrates_contracts.subjects import RETRIEVAL_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings


def create_app(settings: ZocratesSettings, service=None) -> FastStream:
    if service is None:
        from zocrates_retrieval.config import RetrievalSettings
        from zocrates_retrieval.service import RetrievalService

        service = RetrievalService(RetrievalSettings())
    broker = bus.make_broker(settings)

    @bus.request_consumer(broker, RetrievalRequested, durable=RETRIEVAL_CONSUMER,
                          service="retrieval", max_workers=4)
    async def on_retrieval(request: RetrievalRequested):
        """Hybrid search of the caller's library (tenant = user, library)."""
        return await service.search(request)

    bus.health_responder(broker, "retrieval", lambda: {"status": "ok"})
    return service_app(broker, on_start=service.start, on_stop=service.close,
                       replicas=settings.stream_replicas)
