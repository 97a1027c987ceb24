"""An ASGI app served by uvicorn on a free loopback port for the length of a block."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn

from zocrates_runtime.natsserver import free_port


@contextlib.asynccontextmanager
async def serving(app, port: int | None = None, **config) -> AsyncIterator[str]:
    """Serve `app` (on `port`, else a free one) until the block ends; yields its base URL."""
    port = port or free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config))
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():  # it failed to start: raise why
                task.result()
                raise RuntimeError("uvicorn stopped before it started")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
