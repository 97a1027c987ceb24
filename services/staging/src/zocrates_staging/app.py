"""The staging service on the bus.

PDF staging for import is not built yet (its own issue): every request gets an explicit `not_available`
error, which the gateway reports to the user; never made-up data.
"""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import StagingRequested, ServiceError
from zocrates_contracts.subjects import STAGING_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings

NOT_AVAILABLE = ServiceError(
    code="not_available", service="staging",
    message="PDF staging for import is not available in this build of Zocrates yet.",
)


def create_app(settings: ZocratesSettings) -> FastStream:
    broker = bus.make_broker(settings)

    @bus.request_consumer(broker, StagingRequested, durable=STAGING_CONSUMER, service="staging")
    async def on_request(request: StagingRequested):
        """Answer with an explicit not-available error."""
        return bus.error_reply(request, NOT_AVAILABLE)

    bus.health_responder(broker, "staging", lambda: {"status": "ok", "capability": "not_available"})
    return service_app(broker, replicas=settings.stream_replicas)
