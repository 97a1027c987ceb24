"""Helpers for the runtime tests: read a child's lines with a timeout, check a pid is gone."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable

import psutil
import pytest


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (dead, not yet reaped by init) counts as gone."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Lines:
    """Lines of a subprocess's stdout, read on a thread so a test can wait with a timeout."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._queue.put(line.rstrip("\n"))

    def wait_for(self, predicate: Callable[[str], bool], timeout: float = 15.0) -> str:
        """The first line, already seen or still to come, that matches `predicate`."""
        for line in self.seen:
            if predicate(line):
                return line
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._queue.get(timeout=left)
            except queue.Empty:
                break
            self.seen.append(line)
            if predicate(line):
                return line
        raise AssertionError(f"no matching line within {timeout}s; saw:\n" + "\n".join(self.seen))


def wait_gone(pids, timeout: float = 10.0) -> list[int]:
    """Wait until none of `pids` is alive; returns the ones still alive at the deadline."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.02)
    return left


@pytest.fixture(name="alive")
def _alive():
    return alive


@pytest.fixture(name="wait_gone")
def _wait_gone():
    return wait_gone


@pytest.fixture
def read_lines():
    """`read_lines(proc)` -> `Lines` over the process's stdout."""
    return Lines
