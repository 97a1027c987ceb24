"""Reading Zotero data directories built from the real schema, and real Zotero databases."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_retrieval.adapters.zotero import ZoteroReadError, read_library, snapshot_database


@pytest.fixture
def library(tmp_path, schema_dir):
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    ids = {}
    ids["article"] = b.add_item(
        "journalArticle",
        {
            "title": "Heat transport in graphene",
            "date": "2019-03-00 2019-03",
            "publicationTitle": "Nature Physics",
            "DOI": "10.1038/nphys1234",
        },
        [("Ada", "Lovelace", "author"), ("Alan", "Turing", "editor"), "CERN Collaboration"],
    )
    ids["paper"] = b.add_item(
        "conferencePaper",
        {
            "title": "Fast retrieval",
            "proceedingsTitle": "Proc. SIGIR",
            "date": "2021",
            "extra": "arXiv: 2101.0001\nDOI: 10.1145/3404835.3462891.\nCitation Key: hopper2021fast",
        },
        [("Grace", "Hopper", "author")],
    )
    ids["book"] = b.add_item("book", {"title": "A Book", "publisher": "MIT Press", "date": "1999"})
    ids["article_pdf"] = b.add_attachment(ids["article"][0], "article.pdf", b"%PDF-1.4 x")
    ids["paper_html"] = b.add_attachment(ids["paper"][0], "snapshot.html", b"<p>x</p>", "text/html")
    ids["standalone"] = b.add_attachment(None, "loose notes.md", b"# Notes\n\ntext", "text/markdown")
    ids["note"] = b.add_note(ids["book"][0], "<p>My reading note on the book.</p>")
    ids["trashed"] = b.add_item("journalArticle", {"title": "Retracted"})
    ids["trashed_pdf"] = b.add_attachment(ids["trashed"][0], "retracted.pdf", b"%PDF-1.4 y")
    ids["trashed_attachment"] = b.add_attachment(ids["book"][0], "old.pdf", b"%PDF-1.4 z")
    b.trash(ids["trashed"][0])
    b.trash(ids["trashed_attachment"][0])
    group = b.add_group(4711, "Lab group")
    ids["group_item"] = b.add_item("report", {"title": "Group report", "institution": "ETH"}, library_id=group)
    ids["group_pdf"] = b.add_attachment(ids["group_item"][0], "report.pdf", b"%PDF-1.4 g", library_id=group)
    parent = b.add_collection("Thesis", [ids["article"][0]])
    b.add_collection("Chapter 2", [ids["article"][0], ids["paper"][0]], parent_id=parent)
    b.close()
    return b.dir, ids


def test_items_have_zotero_metadata(library):
    zdir, ids = library
    snap = read_library(zdir)
    article = snap.items[f"user/{ids['article'][1]}"]
    assert article.item_type == "journalArticle"
    assert article.title == "Heat transport in graphene"
    assert article.year == 2019
    assert article.publication == "Nature Physics"
    assert article.doi == "10.1038/nphys1234"
    assert [(c.first_name, c.last_name, c.name, c.creator_type) for c in article.creators] == [
        ("Ada", "Lovelace", "", "author"),
        ("Alan", "Turing", "", "editor"),
        ("", "", "CERN Collaboration", "author"),
    ]
    assert article.collections == ("Thesis", "Thesis/Chapter 2")


def test_base_fields_and_doi_in_extra_are_resolved(library):
    zdir, ids = library
    snap = read_library(zdir)
    paper = snap.items[f"user/{ids['paper'][1]}"]
    assert paper.publication == "Proc. SIGIR"  # proceedingsTitle is a publicationTitle
    assert paper.doi == "10.1145/3404835.3462891"
    assert paper.payload()["citation_key"] == "hopper2021fast"  # Better BibTeX's key, kept on its chunks
    assert "citation_key" not in snap.items[f"user/{ids['article'][1]}"].payload()
    report = snap.items[f"group-4711/{ids['group_item'][1]}"]
    assert report.publication == "ETH"  # institution maps to publisher


def test_attachments_resolve_to_parent_and_storage_path(library):
    zdir, ids = library
    snap = read_library(zdir)
    by_key = {s.key: s for s in snap.sources}
    pdf = by_key[ids["article_pdf"][1]]
    assert pdf.item.key == ids["article"][1]
    assert pdf.path == zdir / "storage" / ids["article_pdf"][1] / "article.pdf"
    assert pdf.content_type == "application/pdf" and pdf.missing_reason is None
    loose = by_key[ids["standalone"][1]]
    assert loose.item.key == ids["standalone"][1] and loose.item.title == "loose notes.md"
    note = by_key[ids["note"][1]]
    assert note.kind == "note" and note.item.key == ids["book"][1] and "reading note" in note.note_html


def test_trash_and_group_libraries(library):
    zdir, ids = library
    snap = read_library(zdir)
    keys = {s.key for s in snap.sources}
    assert ids["trashed_pdf"][1] not in keys  # its parent is in the trash
    assert ids["trashed_attachment"][1] not in keys  # it is in the trash itself
    assert f"user/{ids['trashed_attachment'][1]}" in snap.trashed
    assert [(lib.library_id, lib.kind, lib.name) for lib in snap.libraries] == [
        ("user", "user", "My Library"),
        ("group-4711", "group", "Lab group"),
    ]
    group_sources = snap.sources_in("group-4711")
    assert [s.key for s in group_sources] == [ids["group_pdf"][1]]


def test_snapshot_reads_a_locked_wal_database_without_touching_it(tmp_path, schema_dir):
    """Zotero keeps its database open with an exclusive lock and writes through a WAL."""
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    b.close()
    db = tmp_path / "zotero" / "zotero.sqlite"
    zotero = sqlite3.connect(db)
    zotero.execute("PRAGMA journal_mode=WAL")
    zotero.execute("PRAGMA wal_autocheckpoint=0")  # committed rows stay in the -wal file
    zotero.execute(
        "INSERT INTO items (itemTypeID, libraryID, key) "
        "SELECT itemTypeID, 1, 'WALITEM1' FROM itemTypes WHERE typeName='book'"
    )
    zotero.commit()
    zotero.execute("PRAGMA locking_mode=EXCLUSIVE")
    zotero.execute("BEGIN EXCLUSIVE")  # as Zotero does: nobody else may even read
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.1).execute("SELECT 1 FROM items").fetchall()
    before = sorted(p.name for p in db.parent.iterdir())
    mtime = db.stat().st_mtime_ns
    snap = read_library(db.parent)
    assert "user/WALITEM1" in snap.items
    assert sorted(p.name for p in db.parent.iterdir()) == before
    assert db.stat().st_mtime_ns == mtime
    zotero.rollback()
    zotero.close()


def test_missing_database_is_a_clear_error(tmp_path):
    with pytest.raises(ZoteroReadError, match="no Zotero database"):
        snapshot_database(tmp_path / "zotero.sqlite", tmp_path)


@pytest.mark.parametrize(
    "name, items, sources, abstracts, doi",
    [
        ("nagatashigueru-ZoteroDataBase.zotero.sqlite", 5, 6, 5, "10.1016/j.apsusc.2021.149982"),
        ("hsteinshiromoto-bibliography.zotero.sqlite", 38, 20, 12, "10.1109/TCNS.2018.2885270"),
    ],
)
def test_real_zotero_databases(tmp_path, zotero_db_dir, name, items, sources, abstracts, doi):
    """Databases written by Zotero 6 and 7 themselves (their files are not included)."""
    shutil.copyfile(zotero_db_dir / name, tmp_path / "zotero.sqlite")
    snap = read_library(tmp_path)
    assert len(snap.items) == items
    assert sum(s.kind != "abstract" for s in snap.sources) == sources  # files and notes
    assert sum(s.kind == "abstract" for s in snap.sources) == abstracts  # items with an abstract
    assert doi in {m.doi for m in snap.items.values()}
    assert all(m.title for m in snap.items.values())
    for src in (s for s in snap.sources if s.kind == "attachment"):
        assert src.missing_reason and "file not found" in src.missing_reason  # files not shipped
        assert src.path.parent.name == src.key  # storage/<attachmentKey>/<file>
        assert src.item.key != src.key  # resolved to the parent item
