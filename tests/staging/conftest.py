"""Fixtures of the staging tests: a loopback server, settings that allow exactly it, a service."""

from __future__ import annotations

from pathlib import Path

import pytest
from staging.loopback import LoopbackServer

from zocrates_runtime.staged_store import FileStagedStore
from zocrates_staging.config import StagingSettings
from zocrates_staging.service import StagingService


@pytest.fixture
async def server():
    srv = await LoopbackServer().start()
    yield srv
    await srv.stop()


@pytest.fixture
def work_dir(tmp_path) -> Path:
    return tmp_path / "work"


@pytest.fixture
def settings(server, work_dir) -> StagingSettings:
    """The loopback server allowlisted (its address and port), fast limits."""
    return StagingSettings(
        unsafe_allow_addresses=["127.0.0.1"],
        allowed_ports=[80, 443, server.port],
        work_dir=work_dir,
        total_timeout_s=5,
        connect_timeout_s=2,
        read_timeout_s=2,
        pdf_check="auto",
    )


@pytest.fixture
def file_store(tmp_path) -> FileStagedStore:
    return FileStagedStore(tmp_path / "staged")


@pytest.fixture
async def service(settings, file_store):
    svc = StagingService(settings, file_store)
    await svc.start()
    yield svc
    await svc.close()
