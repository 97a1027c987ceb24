"""An item's Abstract field is indexed on its own, with or without a file, before any file is
converted; the files follow, most recently changed item first."""

from __future__ import annotations

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import SyncedItem
from zocrates_retrieval.adapters.store import EdgeStore, Tenant, indexed_sources
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
        # every abstract before any file; the files most recently changed item first
        assert order[:2] == sorted(order[:2]) and {k.removesuffix(ABSTRACT_SUFFIX) for k in order[:2]} == {
            keys["sleep"],
            keys["coral"],
        }
        assert order[2:] == [keys["newer_pdf"], keys["coral_pdf"]]

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
