"""A small process supervisor for the embedded stack.

Runs named child commands, each in its own session (so its own process group: a Ctrl-C in the
terminal reaches only the supervisor, which then stops the children in order, instead of every
process at once), prefixes their output with `[name] `, restarts a child that exits while the
supervisor is running with capped exponential backoff, and gives up, stopping everything, when
a child crashes too often within a window: a crash loop is a bug to read about, not to hide.

Stopping sends SIGTERM to each child's process group, waits, then SIGKILLs what is left, so a
child's own subprocesses go too. If the supervisor itself dies without a chance to clean up
(SIGKILL, OOM killer), its direct children die with it through Linux's parent-death signal:
see `with_parent_death_signal`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
import sys
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

log = logging.getLogger("zocrates.supervisor")

# Runs between fork and the real program: ask the kernel for SIGKILL when the parent dies,
# then exec. A small exec'd launcher instead of `preexec_fn` because `preexec_fn` is unsafe
# in a process with threads (the stack has several), and the launcher costs ~20 ms once.
# PR_SET_PDEATHSIG survives execve (except for set-uid binaries). The getppid check closes
# the race where the parent died before prctl ran.
_PDEATHSIG_LAUNCHER = (
    "import ctypes,os,sys\n"
    "ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)\n"  # PR_SET_PDEATHSIG = 1, SIGKILL = 9
    "os.getppid() == int(sys.argv[1]) or os._exit(1)\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as e:\n"
    "    print(f'cannot start {sys.argv[2]!r}: {e}', file=sys.stderr)\n"
    "    os._exit(127)\n"
)


def with_parent_death_signal(argv: Sequence[str]) -> list[str]:
    """Wrap `argv` so the program gets SIGKILL when the process that spawns it dies.

    Linux only (PR_SET_PDEATHSIG); elsewhere `argv` is returned unchanged and only an orderly
    shutdown stops children. Build the list in the process that will spawn the child, and
    spawn from a thread that lives as long as that process (the kernel ties the signal to the
    spawning thread): the main thread, or the thread running the event loop.
    """
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-I", "-S", "-c", _PDEATHSIG_LAUNCHER, str(os.getpid()), *argv]


@dataclass(frozen=True)
class Child:
    """One supervised command: a name for its output prefix and logs, argv, extra env."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] | None = None
    cwd: str | None = None


@dataclass(frozen=True)
class RestartPolicy:
    """Backoff before a restart, and the crash budget after which the supervisor gives up.

    The delay doubles with each crash still inside the window (0.5, 1, 2, 4, 8, 10, 10 s...),
    so a child that crashed once long ago restarts quickly again.
    """

    initial_delay: float = 0.5
    max_delay: float = 10.0
    max_crashes: int = 6
    window: float = 60.0

    def delay(self, recent_crashes: int) -> float:
        return min(self.initial_delay * 2 ** max(recent_crashes - 1, 0), self.max_delay)


@dataclass
class ChildState:
    """What the supervisor knows about one child; read it, don't change it."""

    child: Child
    pid: int | None = None
    starts: int = 0
    last_exit: int | None = None
    crashes: deque[float] = field(default_factory=deque)


class Supervisor:
    """Keeps a set of child processes running until stopped.

    `await run()` starts every child and returns once all are stopped: 0 after `stop()` (or a
    signal installed by `stop_on_signals()`), 1 when a child exhausted its crash budget or
    could not be started at all. One supervisor runs once.
    """

    def __init__(
        self,
        children: Sequence[Child],
        *,
        policy: RestartPolicy = RestartPolicy(),
        stop_timeout: float = 5.0,
        output: TextIO | None = None,
    ) -> None:
        names = [c.name for c in children]
        if len(set(names)) != len(names):
            raise ValueError(f"child names must be unique, got {names}")
        self.policy = policy
        self.stop_timeout = stop_timeout
        self.output = output
        self.children = {c.name: ChildState(c) for c in children}
        self.failed: str | None = None
        self._stopping = asyncio.Event()

    @property
    def pids(self) -> dict[str, int]:
        """Pids of the children running now, by name."""
        return {name: s.pid for name, s in self.children.items() if s.pid is not None}

    def stop(self) -> None:
        """Ask for an orderly stop of every child; `run()` returns when they are gone."""
        self._stopping.set()

    def stop_on_signals(self, signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)) -> None:
        """Turn these signals into `stop()`; call from inside the running event loop."""
        loop = asyncio.get_running_loop()
        for sig in signals:
            loop.add_signal_handler(sig, self._on_signal, sig)

    def _on_signal(self, sig: int) -> None:
        if not self._stopping.is_set():
            log.info("received %s; stopping %d children", signal.Signals(sig).name, len(self.pids))
        self.stop()

    async def run(self) -> int:
        """Start every child and supervise them until stopped; see the class docstring."""
        tasks = [asyncio.create_task(self._keep_running(s)) for s in self.children.values()]
        try:
            await asyncio.gather(*tasks)
        finally:
            # Only reached with children alive if run() itself was cancelled or a task failed
            # unexpectedly: never leave them behind.
            self._stopping.set()
            for task in tasks:
                task.cancel()
            for state in self.children.values():
                if state.pid is not None:
                    _signal_group(state.pid, signal.SIGKILL)
        return 1 if self.failed else 0

    async def _keep_running(self, state: ChildState) -> None:
        child = state.child
        env = {**os.environ, **(child.env or {})}
        while not self._stopping.is_set():
            try:
                # Checked here because the launcher would turn a missing program into an
                # exit code 127 that looks like a crash and would be retried.
                if shutil.which(child.argv[0], path=env.get("PATH")) is None:
                    raise FileNotFoundError(f"program not found: {child.argv[0]!r}")
                proc = await asyncio.create_subprocess_exec(
                    *with_parent_death_signal(child.argv),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    env=env,
                    cwd=child.cwd,
                    start_new_session=True,
                )
            except OSError as exc:
                log.error("cannot start %s (%s): %s; stopping all children", child.name, " ".join(child.argv), exc)
                self._give_up(child.name)
                return
            state.pid, state.starts = proc.pid, state.starts + 1
            log.info("started %s (pid %d)", child.name, proc.pid)
            pump = asyncio.create_task(self._pump(child.name, proc.stdout))
            exited = asyncio.create_task(proc.wait())
            stopping = asyncio.create_task(self._stopping.wait())
            await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            if not exited.done():  # asked to stop while the child runs
                await self._terminate(child.name, proc)
                await exited
            # The leader is gone; anything it left in its group must not outlive it.
            _signal_group(proc.pid, signal.SIGKILL)
            state.pid, state.last_exit = None, proc.returncode
            # Bounded: a grandchild that left the group (setsid) may hold the pipe open.
            try:
                await asyncio.wait_for(pump, 2.0)
            except TimeoutError:
                log.warning("%s's output pipe is still held open by a stray process", child.name)
            if self._stopping.is_set():
                return
            await self._after_crash(state)

    async def _after_crash(self, state: ChildState) -> None:
        now = time.monotonic()
        state.crashes.append(now)
        while state.crashes and now - state.crashes[0] > self.policy.window:
            state.crashes.popleft()
        name, how = state.child.name, _describe_exit(state.last_exit)
        if len(state.crashes) >= self.policy.max_crashes:
            log.error(
                "%s %s and has crashed %d times within %.0f s; giving up and stopping all "
                "children (its output above, prefixed [%s], says why)",
                name,
                how,
                len(state.crashes),
                self.policy.window,
                name,
            )
            self._give_up(name)
            return
        delay = self.policy.delay(len(state.crashes))
        log.warning("%s %s; restarting in %.1f s", name, how, delay)
        try:
            await asyncio.wait_for(self._stopping.wait(), delay)
        except TimeoutError:
            pass

    def _give_up(self, name: str) -> None:
        self.failed = self.failed or name
        self.stop()

    async def _terminate(self, name: str, proc: asyncio.subprocess.Process) -> None:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), self.stop_timeout)
        except TimeoutError:
            log.warning("%s did not stop within %.1f s of SIGTERM; killing it", name, self.stop_timeout)
            _signal_group(proc.pid, signal.SIGKILL)

    async def _pump(self, name: str, stream: asyncio.StreamReader | None) -> None:
        """Copy a child's output line by line, prefixed with its name."""
        assert stream is not None
        out = self.output or sys.stdout
        prefix = f"[{name}] ".encode()
        pending = b""
        while chunk := await stream.read(65536):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            if len(pending) > 65536:  # an endless line still gets shown, in pieces
                lines, pending = [*lines, pending], b""
            for line in lines:
                _write(out, prefix + line + b"\n")
        if pending:
            _write(out, prefix + pending + b"\n")


def _write(out: TextIO, data: bytes) -> None:
    out.write(data.decode(errors="replace"))
    out.flush()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exited with code {code}"
