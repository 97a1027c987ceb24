"""The discovery service on the bus: `DiscoveryRequested` in, `CandidatesFound` out; and the
novelty re-check at import time (`RecheckRequested` in, `CandidatesRechecked` out).

Hosted libraries are read from the library catalog bucket retrieval writes, not from sync
pages of discovery's own: any replica sees the whole library (see `DiscoveryService._hosted_library`)."""

from __future__ import annotations

import nats.js.errors
from faststream import FastStream

from zocrates_contracts import DiscoveryRequested, RecheckRequested
from zocrates_contracts.subjects import (
    AUDIT_STREAM,
    DISCOVERY_CONSUMER,
    DISCOVERY_LIBRARY_CONSUMER,
    RECHECK_CONSUMER,
)
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings


def create_app(settings: ZocratesSettings, service=None) -> FastStream:
    if service is None:
        from zocrates_discovery.config import DiscoverySettings
        from zocrates_discovery.service import DiscoveryService

        service = DiscoveryService(DiscoverySettings())
    broker = bus.make_broker(settings)

    # AckWait is at most half the gateway's deadline (discovery 45 s, recheck 10 s): a job of
    # a killed replica is redelivered while its caller still waits; heartbeats cover slow ones.
    bus.answer_requests(
        broker,
        "discovery",
        service,
        {
            DiscoveryRequested: bus.Answer(DISCOVERY_CONSUMER, "discover", max_workers=8, ack_wait=15.0),
            RecheckRequested: bus.Answer(RECHECK_CONSUMER, "answer_recheck", ack_wait=5.0),
        },
    )

    async def start() -> None:
        js = broker.config.connection_state.stream
        if getattr(service, "catalog", "absent") is None:  # the real service: the shared catalog
            await service.connect_catalog(js, settings.stream_replicas)
            try:  # earlier releases kept a copy per replica through their own consumer
                await js.delete_consumer(AUDIT_STREAM, DISCOVERY_LIBRARY_CONSUMER)
            except nats.js.errors.NotFoundError:
                pass
        await service.start()

    bus.health_responder(broker, "discovery", service.health, settings.instance_id)
    return service_app(broker, on_start=start, on_stop=service.close, settings=settings)
