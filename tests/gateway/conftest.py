"""Fixtures for whole-system tests of the gateway (see tests/harness/system.py)."""

from __future__ import annotations

import pytest

from harness.system import running_system


@pytest.fixture
async def system(nats_server):
    async with running_system(nats_server.url) as running:
        yield running
