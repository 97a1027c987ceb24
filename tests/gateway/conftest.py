"""Fixtures for whole-system tests of the gateway (see tests/harness/system.py)."""

from __future__ import annotations

import pytest
import pytest_asyncio

from harness.system import running_system


@pytest.fixture
async def system(nats_server):
    async with running_system(nats_server.url) as running:
        yield running


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_system(module_nats_server):
    """One running system for a module whose tests do not depend on each other's state."""
    async with running_system(module_nats_server.url) as running:
        yield running
