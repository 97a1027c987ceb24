"""The verifier service on the bus: `VerificationRequested` in, `VerificationCompleted` out.

Many turns' requests are handled concurrently so the engine's micro-batcher can merge their
pairs into one forward pass; replicas share the durable consumer (one per GPU). The same
process also serves the Jev/Laya `/v1/systemone` HTTP API (`ZOCRATES_VERIFIER_HTTP_PORT`),
so other tools can use this replica's model directly.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
import uvicorn
from faststream import FastStream

from zocrates_contracts import VerificationRequested
from zocrates_contracts.subjects import VERIFIER_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings

log = structlog.get_logger("zocrates.verifier")


def create_app(settings: ZocratesSettings, service=None, *, http_port: int | None = None) -> FastStream:
    if service is None:
        from zocrates_verifier.config import VerifierSettings
        from zocrates_verifier.service import VerifierService

        service = VerifierService(VerifierSettings())
        http_port = service.settings.http_port
    broker = bus.make_broker(settings)
    http: dict = {}

    # AckWait well under the gateway's 10 s per-request verification timeout, so the jobs of a
    # replica that dies mid-batch are redelivered while their turns still wait (R-GPU-5);
    # in-progress heartbeats every AckWait/3 keep a long batch from being redelivered.
    @bus.request_consumer(
        broker, VerificationRequested, durable=VERIFIER_CONSUMER, service="verifier", max_workers=32, ack_wait=5.0
    )
    async def on_verification(request: VerificationRequested):
        """Score every occurrence of one turn."""
        return await service.verify(request)

    bus.health_responder(broker, "verifier", service.health, settings.instance_id)

    async def start() -> None:
        await service.start()
        if http_port:
            http["task"] = asyncio.create_task(serve_http(service, http_port))

    async def stop() -> None:
        if task := http.get("task"):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await service.close()

    return service_app(broker, on_start=start, on_stop=stop, settings=settings)


async def serve_http(service, port: int) -> None:
    """Serve `/v1/systemone` until cancelled; a taken port is logged, never fatal to the bus side."""
    from zocrates_verifier.http import create_http_app

    host = service.settings.http_host
    config = uvicorn.Config(create_http_app(service), host=host, port=port, log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    try:
        await server.serve()
    except (OSError, SystemExit) as exc:
        log.error(
            "verifier HTTP API not started",
            host=host,
            port=port,
            error=str(exc),
            hint="set ZOCRATES_VERIFIER_HTTP_PORT to a free port, or unset it",
        )
    except asyncio.CancelledError:
        server.should_exit = True
        raise
