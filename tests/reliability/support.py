"""Helpers of the reliability tests: wait on a condition, start worker processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


async def wait_until(condition: Callable[[], object], timeout: float = 10.0, what: str = "", interval: float = 0.02):
    """Poll `condition` (sync or async) until truthy; its value, or AssertionError at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        await asyncio.sleep(interval)


def spawn(module: str, *args: str) -> subprocess.Popen:
    """`python -m <module> args...` with the tests directory importable; stdout piped."""
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", module, *args], stdout=subprocess.PIPE, stderr=None, env=env, start_new_session=True
    )


async def wait_ready(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), timeout)
    assert line.strip() == b"ready", f"worker did not start: {line!r} (exit {proc.poll()})"


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL a worker (and its process group) and reap it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


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
