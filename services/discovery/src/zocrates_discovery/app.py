"""The discovery service on the bus: `DiscoveryRequested` in, `CandidatesFound` out; and the
novelty re-check at import time (`RecheckRequested` in, `CandidatesRechecked` out)."""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import DiscoveryRequested, LibrarySyncRequested, RecheckRequested
from zocrates_contracts.subjects import DISCOVERY_CONSUMER, DISCOVERY_LIBRARY_CONSUMER, RECHECK_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings


def create_app(settings: ZocratesSettings, service=None) -> FastStream:
    if service is None:
        from zocrates_discovery.config import DiscoverySettings
        from zocrates_discovery.service import DiscoveryService

        service = DiscoveryService(DiscoverySettings(), state_dir=settings.data_dir / "discovery")
    broker = bus.make_broker(settings)

    @bus.request_consumer(broker, DiscoveryRequested, durable=DISCOVERY_CONSUMER,
                          service="discovery", max_workers=8, ack_wait=60.0)
    async def on_discovery(request: DiscoveryRequested):
        """Search OpenAlex (and fallbacks), drop what the user owns."""
        return await service.discover(request)

    @bus.request_consumer(broker, RecheckRequested, durable=RECHECK_CONSUMER,
                          service="discovery", max_workers=4)
    async def on_recheck(request: RecheckRequested):
        """Which of these candidates does the user own by now?"""
        return await service.answer_recheck(request)

    # Its own durable consumer of the sync pages retrieval stores: one worker keeps them in order.
    @bus.request_consumer(broker, LibrarySyncRequested, durable=DISCOVERY_LIBRARY_CONSUMER,
                          service="discovery", max_workers=1)
    async def on_library_sync(request: LibrarySyncRequested):
        """Feed a hosted library's sync pages to the novelty filter (retrieval answers the request)."""
        await service.apply_library_sync(request)
        return None

    bus.health_responder(broker, "discovery", service.health)
    return service_app(broker, on_start=service.start, on_stop=service.close,
                       replicas=settings.stream_replicas)
