"""A real retrieval service over a built Zotero library, for tests that search or look up in it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.service import RetrievalService


@asynccontextmanager
async def ingested_service(tmp_path_factory, zotero_dir: Path, **settings) -> AsyncIterator[RetrievalService]:
    """A `RetrievalService` over the Zotero data directory `zotero_dir`, started and done with its
    first ingest (the real embedding model, on the CPU), closed on exit; `settings` are further
    `RetrievalSettings`. HOME points at an empty folder meanwhile, so a real ~/Zotero is never
    discovered."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        svc = RetrievalService(
            RetrievalSettings(
                zotero_dir=zotero_dir, data_dir=tmp_path_factory.mktemp("data"), embedding_device="cpu", **settings
            )
        )
        await svc.start()
        await svc._ingest_task
    try:
        yield svc
    finally:
        await svc.close()
