"""The staging service on the bus: `StagingRequested` in, a `BatchStaged` manifest out.

Staged PDFs go to the NATS Object Store (`zocrates_runtime.staged_store`), from which the
gateway serves them to their owner only.
"""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import StagingRequested
from zocrates_contracts.subjects import STAGING_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings


def create_app(settings: ZocratesSettings, service=None) -> FastStream:
    broker = bus.make_broker(settings)
    holder: dict = {"service": service}

    if service is None:
        from zocrates_runtime.staged_store import NatsStagedStore
        from zocrates_staging.config import StagingSettings
        from zocrates_staging.service import StagingService

        staging_settings = StagingSettings()

        async def start() -> None:
            # The store needs the broker's JetStream connection, which exists only once started.
            js = broker.config.connection_state.stream
            store = NatsStagedStore(
                js, bucket=staging_settings.bucket, ttl=staging_settings.expire_after, replicas=settings.stream_replicas
            )
            holder["service"] = StagingService(staging_settings, store)
            await holder["service"].start()
    else:

        async def start() -> None:
            await service.start()

    async def stop() -> None:
        if holder["service"] is not None:
            await holder["service"].close()

    # AckWait at most half the gateway's staging deadline (120 s); heartbeats cover long batches.
    @bus.request_consumer(
        broker, StagingRequested, durable=STAGING_CONSUMER, service="staging", max_workers=4, ack_wait=30.0
    )
    async def on_staging(request: StagingRequested):
        """Download, check and store the selected candidates' open-access PDFs."""
        return await holder["service"].stage(request)

    bus.health_responder(
        broker,
        "staging",
        lambda: holder["service"].health() if holder["service"] else {"status": "starting"},
        settings.instance_id,
    )
    return service_app(broker, on_start=start, on_stop=stop, settings=settings)
