"""The verifier service on the bus: `VerificationRequested` in, `VerificationCompleted` out.

Many turns' requests are handled concurrently so the engine's micro-batcher can merge their
pairs into one forward pass; replicas share the durable consumer (one per GPU).
"""

from __future__ import annotations

from faststream import FastStream

from zocrates_contracts import VerificationRequested
from zocrates_contracts.subjects import VERIFIER_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings


def create_app(settings: ZocratesSettings, service=None) -> FastStream:
    if service is None:
        from zocrates_verifier.config import VerifierSettings
        from zocrates_verifier.service import VerifierService

        service = VerifierService(VerifierSettings())
    broker = bus.make_broker(settings)

    @bus.request_consumer(broker, VerificationRequested, durable=VERIFIER_CONSUMER,
                          service="verifier", max_workers=32, ack_wait=30.0)
    async def on_verification(request: VerificationRequested):
        """Score every occurrence of one turn."""
        return await service.verify(request)

    bus.health_responder(broker, "verifier", service.health)
    return service_app(broker, on_start=service.start, on_stop=service.close)
