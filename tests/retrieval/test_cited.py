"""The files of items cited in a user's recent answers are converted right after those of
recently changed items, before older uncited ones; an item cited while a run converts files
has its waiting files converted next, and another user's citations move nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.zotero import ZoteroLibraryBuilder
from zocrates_retrieval.adapters.store import EdgeStore
from zocrates_retrieval.ingest import Ingestor


def build(tmp_path, schema_dir, make) -> tuple[ZoteroLibraryBuilder, dict[str, str], dict[str, str]]:
    """A library of four items with a PDF each: one changed yesterday, three changed years ago
    (`a` the oldest). Returns the builder, item keys and file keys by name."""
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    items, files = {}, {}
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    for name, modified in (("a", "2020-01-01 00:00:00"), ("b", "2021-01-01 00:00:00"), ("c", "2022-01-01 00:00:00")):
        item, items[name] = b.add_item("journalArticle", {"title": f"Paper {name}"})
        _, files[name] = b.add_attachment(item, f"{name}.pdf", make.text_pdf([("Results", [f"Findings of {name}."])]))
        b.con.execute("UPDATE items SET dateModified=? WHERE key=?", (modified, items[name]))
    item, items["recent"] = b.add_item("journalArticle", {"title": "Paper added yesterday"})
    _, files["recent"] = b.add_attachment(item, "recent.pdf", make.text_pdf([("Results", ["New findings."])]))
    b.con.execute("UPDATE items SET dateModified=? WHERE key=?", (yesterday, items["recent"]))
    b.con.commit()
    return b, items, files


def recording(store) -> list[str]:
    """The source keys `store` is written, in the order of their first write."""
    order: list[str] = []
    upsert = store.upsert

    def recording_upsert(points):
        for p in points:
            if p.payload["source_key"] not in order:
                order.append(p.payload["source_key"])
        return upsert(points)

    store.upsert = recording_upsert
    return order


def test_a_cited_items_file_is_converted_before_older_uncited_ones(tmp_path, schema_dir, make, embedder):
    b, items, files = build(tmp_path, schema_dir, make)
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    order = recording(store)
    try:
        progress = Ingestor(store, embedder).ingest_zotero(b.dir, "u1", cited=[("user", items["a"])])
        assert progress.state == "done" and progress.indexed == 4
        # recent first, then the cited one (the oldest), then the rest newest first
        assert order == [files["recent"], files["a"], files["c"], files["b"]]
    finally:
        store.close()


def test_an_item_cited_while_a_run_converts_files_has_its_waiting_file_converted_next(
    tmp_path, schema_dir, make, embedder, monkeypatch
):
    from zocrates_retrieval import ingest

    monkeypatch.setattr(ingest, "FETCH_BATCH", 1)  # a look at what was cited before each file
    b, items, files = build(tmp_path, schema_dir, make)
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    order = recording(store)
    ingestor = Ingestor(store, embedder)

    def on_progress(progress):
        if progress.files_done == 1:  # the recent file is done: an answer cites the oldest one
            ingestor.cited("u2", [("user", items["c"])])  # another user's answer: not this run's
            ingestor.cited("u1", [("user", items["a"])])

    try:
        progress = ingestor.ingest_zotero(b.dir, "u1", on_progress=on_progress)
        assert progress.state == "done" and progress.indexed == 4
        assert order == [files["recent"], files["a"], files["c"], files["b"]]
    finally:
        store.close()
    ingestor.cited("u1", [("user", items["b"])])  # no run going: left to the next run's list
    assert ingestor._cited_now == {}
