"""Running a bus service: one FastStream app with streams declared before consumers start."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from faststream import FastStream
from faststream.nats import NatsBroker

from zocrates_runtime import bus
from zocrates_runtime.logging import configure_logging
from zocrates_runtime.settings import ZocratesSettings
from zocrates_runtime.tracing import configure_tracing

Hook = Callable[[], Awaitable[None]]


def service_app(
    broker: NatsBroker,
    *,
    on_start: Hook | None = None,
    on_stop: Hook | None = None,
    settings: ZocratesSettings | None = None,
) -> FastStream:
    app = FastStream(broker)
    replicas = settings.stream_replicas if settings else 1

    @app.on_startup
    async def _declare() -> None:
        await broker.connect()
        await bus.ensure_streams(broker, replicas)
        await bus.ensure_ack_waits(broker)
        if on_start is not None:
            await on_start()

    @app.after_startup
    async def _announce() -> None:
        # Written once the consumers run: a container's health check reads this replica's id
        # from it and asks `health.<service>.<id>`, which only this replica answers.
        if settings and settings.instance_file:
            settings.instance_file.write_text(settings.instance_id)

    @app.on_shutdown
    async def _close() -> None:
        if settings and settings.instance_file:
            settings.instance_file.unlink(missing_ok=True)
        if on_stop is not None:
            await on_stop()

    return app


def run(name: str, build: Callable[[ZocratesSettings], FastStream]) -> None:
    """Entry point of `python -m zocrates_<name>`: logging, tracing, then the app until signalled."""
    settings = ZocratesSettings()
    configure_logging(name, json=settings.log_json, level=settings.log_level)
    configure_tracing(name, settings.otlp_endpoint)
    asyncio.run(build(settings).run())
