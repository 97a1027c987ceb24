"""Waiting on the event a test is about, never on a guessed sleep: poll its condition until a
deadline, or hold the model at a gate and learn when it got there."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable


async def eventually(condition: Callable[[], object], timeout: float = 10.0, interval: float = 0.02):
    """Poll `condition` (sync or async) until it returns something truthy or `timeout` passes;
    its last value, which the caller's own assertion judges."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(interval)


async def wait_until(condition: Callable[[], object], timeout: float = 10.0, what: str = "", interval: float = 0.02):
    """Like `eventually`, but an AssertionError naming `what` when the deadline passes."""
    if value := await eventually(condition, timeout, interval):
        return value
    raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")


class Gate(threading.Event):
    """The event a stand-in model waits on (`gate.wait(5)` in its forward pass) until the test
    opens it (`gate.set()`), which also tells when the model got there: `await gate.reached()`
    orders "the model is busy" before whatever a test queues behind it."""

    def __init__(self) -> None:
        super().__init__()
        self._reached = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self._reached.set()
        return super().wait(timeout)

    async def reached(self, timeout: float = 5.0) -> None:
        assert await asyncio.to_thread(self._reached.wait, timeout), f"nothing reached the gate in {timeout}s"
