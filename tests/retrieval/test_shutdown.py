"""The service stops promptly mid-ingest (the stack gives it a few seconds before it kills it),
and a stopped run deletes nothing it did not reach."""

from __future__ import annotations

import time

from harness.waiting import wait_until
from harness.zotero import ZoteroLibraryBuilder
from zocrates_retrieval.adapters.store import Tenant, indexed_sources
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.service import RetrievalService


async def test_close_mid_ingest_returns_within_a_second_or_two(tmp_path, schema_dir, pdf_dir, no_home_zotero):
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    pdfs = sorted(pdf_dir.rglob("*.pdf")) * 3
    for i, path in enumerate(pdfs):
        item, _ = b.add_item("journalArticle", {"title": f"Paper {i}"})
        b.add_attachment(item, f"p{i}.pdf", path.read_bytes())
    b.close()
    svc = RetrievalService(RetrievalSettings(zotero_dir=b.dir, data_dir=tmp_path / "data", embedding_device="cpu"))
    await svc.start()

    def converting() -> bool:  # the snapshot and plan come first
        progress = svc._progress.get("local")
        return progress is not None and bool(progress.sources_total)

    await wait_until(converting, 60, "the run to start converting")
    started = time.perf_counter()
    await svc.close()
    took = time.perf_counter() - started
    assert took < 2.5, f"close() took {took:.1f} s mid-ingest (it was 6-8 s before the converter was killed)"
    assert svc._progress["local"].state in ("stopped", "done")

    reopened = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=tmp_path / "data", embedding_device="cpu"))
    await reopened.start()
    try:
        kept = indexed_sources(reopened.store, Tenant("local"))
        assert len(kept) == svc._progress["local"].indexed  # what was indexed stays; nothing half-written
    finally:
        await reopened.close()
