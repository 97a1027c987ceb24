"""Helpers of the reliability tests: a running system on a thread of its own."""

from __future__ import annotations

import asyncio
import threading


class ThreadedSystem:
    """`harness.system.running_system(...)` on an event loop of its own, in a thread.

    For synchronous tests (hypothesis `@given`, schemathesis) that talk to the gateway over
    real HTTP while the gateway and the services' bus apps keep running. `call(coro)` runs a
    coroutine on the system's loop (to make tokens or seed data) and returns its result.
    """

    def __init__(self, nats_url: str, **overrides) -> None:
        self.nats_url, self.overrides = nats_url, overrides
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="threaded-system", daemon=True)

    def call(self, coro, timeout: float = 60.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def __enter__(self):
        from harness.system import running_system

        self.thread.start()
        self._context = running_system(self.nats_url, **self.overrides)
        self.system = self.call(self._context.__aenter__())
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.call(self._context.__aexit__(None, None, None))
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()
