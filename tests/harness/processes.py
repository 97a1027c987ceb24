"""Workers in processes of their own: start one with the tests importable, wait for its
`ready`, kill it with everything it started."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


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
