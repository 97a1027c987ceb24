"""An item's Abstract field is indexed on its own, with or without a file, before any file is
converted; the files follow, most recently changed item first."""

from __future__ import annotations

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import SyncedItem
from zocrates_retrieval.adapters.store import EdgeStore, Tenant, indexed_sources, tenant_filter
from zocrates_retrieval.adapters.zotero import ABSTRACT_SUFFIX, read_library
from zocrates_retrieval.ingest import Ingestor
from zocrates_retrieval.search import Searcher, to_evidence

SLEEP = (
    "Sleep after learning consolidates declarative memories: participants who slept for eight hours "
    "recalled 20% more word pairs than those kept awake, an effect tied to slow-wave sleep."
)
CORAL = (
    "Coral reefs bleached across the Great Barrier Reef during the 2016 marine heatwave, when sea "
    "surface temperatures stayed above the bleaching threshold for eight weeks."
)


@pytest.fixture
def converted(monkeypatch) -> list[str]:
    """The names of the files the converter pool is given, in order."""
    from zocrates_retrieval.adapters.isolation import ConverterPool

    names: list[str] = []
    convert_many = ConverterPool.convert_many

    def counting(self, jobs):
        names.extend(job.path.name for job in jobs)
        return convert_many(self, jobs)

    monkeypatch.setattr(ConverterPool, "convert_many", counting)
    return names


def build(tmp_path, schema_dir, make):
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    keys = {}
    _, keys["sleep"] = b.add_item(
        "journalArticle",
        {"title": "Sleep and memory", "date": "2019", "abstractNote": SLEEP},
        [("Jan", "Born", "author")],
    )
    coral, keys["coral"] = b.add_item("journalArticle", {"title": "Bleaching in 2016", "abstractNote": CORAL})
    _, keys["coral_pdf"] = b.add_attachment(coral, "coral.pdf", make.text_pdf([("Results", ["Reefs bleached."])]))
    _, keys["placeholder"] = b.add_item("journalArticle", {"title": "No abstract", "abstractNote": "n/a"})
    newer, keys["newer"] = b.add_item("journalArticle", {"title": "Newer paper"})
    _, keys["newer_pdf"] = b.add_attachment(newer, "new.pdf", make.text_pdf([("Results", ["Newer findings."])]))
    trashed, _ = b.add_item("journalArticle", {"title": "Trashed", "abstractNote": SLEEP.replace("Sleep", "Naps")})
    b.trash(trashed)
    for key, when in ((keys["coral"], "2020-01-01 00:00:00"), (keys["newer"], "2026-11-30 12:00:00")):
        b.con.execute("UPDATE items SET dateModified=? WHERE key=?", (when, key))
    b.con.commit()
    return b, keys


def test_abstracts_are_sources_of_their_own(tmp_path, schema_dir, make):
    b, keys = build(tmp_path, schema_dir, make)
    try:
        snap = read_library(b.dir)
    finally:
        b.close()
    abstracts = {s.key: s for s in snap.sources if s.kind == "abstract"}
    assert set(abstracts) == {keys["sleep"] + ABSTRACT_SUFFIX, keys["coral"] + ABSTRACT_SUFFIX}
    sleep = abstracts[keys["sleep"] + ABSTRACT_SUFFIX]
    assert sleep.abstract == SLEEP and sleep.item.key == keys["sleep"] and sleep.item.year == 2019


def test_an_item_without_a_file_answers_from_its_abstract_and_abstracts_come_first(
    tmp_path, schema_dir, make, embedder
):
    b, keys = build(tmp_path, schema_dir, make)
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    order: list[str] = []
    upsert = store.upsert

    def recording_upsert(points):
        order.extend(dict.fromkeys(p.payload["source_key"] for p in points))
        return upsert(points)

    store.upsert = recording_upsert
    try:
        ingestor = Ingestor(store, embedder)
        progress = ingestor.ingest_zotero(b.dir, "u1")
        assert progress.state == "done" and progress.failures == []
        assert progress.indexed == 4  # two abstracts, two files
        # every abstract before any file, and every file by its words before any is embedded
        # (each written twice: searchable by its words, then embedded); the files of the most
        # recently changed item first
        abstracts = {keys["sleep"] + ABSTRACT_SUFFIX, keys["coral"] + ABSTRACT_SUFFIX}
        assert set(order[:2]) == set(order[2:4]) == abstracts
        assert order[4:] == [keys["newer_pdf"], keys["coral_pdf"]] * 2

        hits = Searcher(store, embedder).search(Tenant("u1"), "does sleeping help people remember word pairs?", 3)
        top = to_evidence(hits[0])
        assert top.item_key == keys["sleep"] and top.text == SLEEP
        assert (top.kind, top.role, top.attachment_key, top.section) == ("abstract", "abstract", None, "Abstract")
        assert top.title == "Sleep and memory" and top.year == 2019

        # unchanged: nothing re-embedded; a changed abstract is re-indexed, a removed one deleted
        assert ingestor.ingest_zotero(b.dir, "u1").indexed == 0
        b.con.execute("UPDATE itemDataValues SET value=? WHERE value=?", (SLEEP.replace("20%", "25%"), SLEEP))
        b.con.execute(
            "DELETE FROM itemData WHERE valueID IN (SELECT valueID FROM itemDataValues WHERE value=?)", (CORAL,)
        )
        b.con.commit()
        progress = ingestor.ingest_zotero(b.dir, "u1")
        assert (progress.indexed, progress.removed) == (1, 1)
        assert {key for _, key in indexed_sources(store, Tenant("u1"))} == {
            keys["sleep"] + ABSTRACT_SUFFIX,
            keys["coral_pdf"],
            keys["newer_pdf"],
        }
    finally:
        b.close()
        store.close()


def test_a_synced_abstract_belongs_to_a_regular_item():
    assert SyncedItem(key="ABCD2345", item_type="journalArticle", abstract=SLEEP).abstract == SLEEP
    for item_type in ("note", "attachment"):
        with pytest.raises(ValueError, match="abstract belongs to regular items"):
            SyncedItem(key="ABCD2345", item_type=item_type, abstract=SLEEP)


def test_abstracts_are_found_by_their_words_before_they_are_embedded_and_a_stop_in_between_loses_nothing(
    tmp_path, schema_dir, make, embedder
):
    from zocrates_retrieval.adapters.store import SparseEncoder, query_chunks, tenant_filter
    from zocrates_retrieval.ingest import LEXICAL

    b, keys = build(tmp_path, schema_dir, make)
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    ingestor = Ingestor(store, embedder)
    seen: list[dict] = []

    def stop_once_searchable_by_words(p):
        if p.abstracts and not seen:
            hashes = {
                q["source_key"]: q["content_hash"]
                for q in store.scroll(tenant_filter(Tenant("u1")), ["source_key", "content_hash"])
            }
            seen.append(hashes)
            lexical = query_chunks(
                store,
                Tenant("u1"),
                dense=None,
                sparse=SparseEncoder().query("slept eight hours recalled word pairs"),
                limit=3,
                mode="lexical",
            )
            hybrid = Searcher(store, embedder).search(Tenant("u1"), "slept eight hours recalled word pairs", 3)
            seen.append({"lexical": lexical[0].payload["item_key"], "hybrid": hybrid[0].payload["item_key"]})
            ingestor.stop.set()

    try:
        progress = ingestor.ingest_zotero(b.dir, "u1", on_progress=stop_once_searchable_by_words)
        assert progress.state == "stopped" and progress.abstracts == 2 and progress.indexed == 0
        hashes, found = seen
        assert set(hashes) == {keys["sleep"] + ABSTRACT_SUFFIX, keys["coral"] + ABSTRACT_SUFFIX}
        assert all(h.startswith(LEXICAL) for h in hashes.values())
        assert found == {"lexical": keys["sleep"], "hybrid": keys["sleep"]}  # no dense vector yet: found all the same
        dense = query_chunks(
            store, Tenant("u1"), dense=embedder.embed_query("memory after sleep"), sparse=None, limit=5, mode="dense"
        )
        assert dense == []  # nothing is embedded yet

        ingestor.stop.clear()
        progress = ingestor.ingest_zotero(b.dir, "u1")  # the next run embeds them
        assert progress.state == "done" and progress.indexed == 4 and progress.abstracts == 2
        hashes = {
            q["source_key"]: q["content_hash"]
            for q in store.scroll(tenant_filter(Tenant("u1")), ["source_key", "content_hash"])
        }
        assert not any(h.startswith(LEXICAL) for h in hashes.values())
        dense = query_chunks(
            store, Tenant("u1"), dense=embedder.embed_query("memory after sleep"), sparse=None, limit=5, mode="dense"
        )
        assert dense[0].payload["item_key"] == keys["sleep"]
    finally:
        b.close()
        store.close()


def test_files_are_searchable_by_their_words_before_any_is_embedded_and_a_stop_between_costs_no_reading(
    tmp_path, schema_dir, make, embedder, converted
):
    from zocrates_retrieval.ingest import LEXICAL

    b, keys = build(tmp_path, schema_dir, make)
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    files = {keys["coral_pdf"], keys["newer_pdf"]}

    def hashes() -> dict[str, str]:
        points = store.scroll(tenant_filter(Tenant("u1")), ["source_key", "content_hash"])
        return {p["source_key"]: p["content_hash"] for p in points if p["source_key"] in files}

    try:
        first = Ingestor(store, embedder)
        seen: list[dict[str, str]] = []

        def stop_once_all_are_read(progress):
            if progress.files_searchable == 2 and not seen:
                seen.append(hashes())  # every file written, none embedded yet: stop here
                first.stop.set()

        stopped = first.ingest_zotero(tmp_path / "zotero", "u1", on_progress=stop_once_all_are_read)
        assert stopped.state == "stopped" and stopped.indexed == 2  # the abstracts only
        assert set(seen[0]) == files and all(h.startswith(LEXICAL) for h in seen[0].values())
        assert sorted(converted) == ["coral.pdf", "new.pdf"]
        hits = Searcher(store, embedder).search(Tenant("u1"), "newer findings", 3)
        assert keys["newer_pdf"] in [to_evidence(h).attachment_key for h in hits]  # found by its words

        # the next run embeds what the index holds of each file: none is read again
        converted.clear()
        done = Ingestor(store, embedder).ingest_zotero(tmp_path / "zotero", "u1")
        assert done.state == "done" and done.indexed == 2 and done.files_searchable == 2
        assert converted == [] and done.pages == stopped.pages + 2  # one page of text each
        assert set(hashes()) == files and not any(h.startswith(LEXICAL) for h in hashes().values())
    finally:
        store.close()


def test_the_embedding_pass_embeds_what_the_first_pass_read_without_reading_it_again(
    tmp_path, pdf_dir, embedder, converted
):
    from bench.bench_retrieval import pdf_library
    from zocrates_contracts import SCORED_UNITS
    from zocrates_retrieval.adapters.store import decode_vectors
    from zocrates_retrieval.convert import convert_file
    from zocrates_retrieval.domain.chunking import chunk_blocks
    from zocrates_retrieval.ingest import LEXICAL, _embedding_text, _scored_spans

    pdf = pdf_dir / "cermine" / "test1.pdf"
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        progress = Ingestor(store, embedder).ingest_zotero(pdf_library(tmp_path / "zotero", [pdf]), "u1")
        stored = sorted(store.scroll(tenant_filter(Tenant("u1")), True), key=lambda p: p["chunk_no"])
    finally:
        store.close()
    assert converted == [pdf.name] and progress.state == "done" and progress.indexed == 1
    doc = convert_file(pdf, "application/pdf")
    chunks = chunk_blocks(doc.blocks, 200, embedder.count_tokens)
    assert progress.pages == doc.pages and progress.chunks == len(chunks) == len(stored)
    assert [p["text"] for p in stored] == [c.text for c in chunks]
    assert not any(p["content_hash"].startswith(LEXICAL) for p in stored)
    texts = [_embedding_text(pdf.stem, c.section_label, c.text) for c in chunks]
    units = [[(u.kind, u.start, u.end) for u in c.units] for c in chunks]
    _, want = embedder.embed_with_spans(texts, [_scored_spans(t, c.text, u) for t, c, u in zip(texts, chunks, units)])
    for p, w, u in zip(stored, want, units):
        got = decode_vectors(p["unit_vectors"], embedder.dim)
        assert got.shape == w.shape == (sum(k in SCORED_UNITS for k, *_ in u), embedder.dim)
        assert got.size == 0 or (got * w).sum(axis=1).min() > 0.999
