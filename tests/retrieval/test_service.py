"""Ingest -> search -> evidence through `RetrievalService`, on a Zotero library built from the
real schema, and incremental re-ingest."""

from __future__ import annotations

import sqlite3

import pytest
import pytest_asyncio

from harness.waiting import eventually
from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import EvidenceRetrieved, RetrievalRequested
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.service import RetrievalService

GRAPHENE = [
    ("Abstract", ["We report the first measurement of the thermal conductivity of a suspended graphene sheet."]),
    (
        "Introduction",
        [
            "Graphene conducts heat remarkably well. Suspended single-layer graphene shows a thermal "
            "conductivity of up to 5000 W/mK at room temperature, far above copper."
        ],
    ),
    (
        "Methods",
        [
            "We measured the thermal conductivity with confocal micro-Raman spectroscopy, heating the "
            "flake with a laser and reading the shift of the G peak."
        ],
    ),
]
YEAST = [
    (
        "Results",
        [
            "Heat shock proteins in budding yeast refold misfolded proteins after thermal stress; "
            "deleting HSP104 made the cells die at 50 degrees."
        ],
    )
]
SNAPSHOT = (
    b"<html><head><title>Coffee</title></head><body><h1>Coffee trade</h1>"
    b"<p>Arabica prices on the New York exchange doubled during the 2021 Brazilian frost.</p></body></html>"
)


def request(query: str, user: str = "local", library: str | None = None, top_k: int = 5) -> RetrievalRequested:
    return RetrievalRequested(
        turn_id="turn1",
        session_id="sess1",
        user_id=user,
        reply_to="zocrates.reply.gw.retrieval",
        query=query,
        top_k=top_k,
        library_id=library,
    )


# One ingest serves the read-only tests of this module; the incremental test gets its own.
pytestmark = pytest.mark.asyncio(loop_scope="module")


def build_library(root, schema_dir, pdf_dir, make):
    b = ZoteroLibraryBuilder(root / "zotero", schema_dir)
    keys = {}
    graphene, keys["graphene"] = b.add_item(
        "journalArticle",
        {
            "title": "Thermal conductivity of graphene",
            "date": "2008",
            "DOI": "10.1021/nl0731872",
            "publicationTitle": "Nano Letters",
        },
        [("Alexander", "Balandin", "author")],
    )
    _, keys["graphene_pdf"] = b.add_attachment(graphene, "balandin.pdf", make.text_pdf(GRAPHENE))
    dvt, keys["dvt"] = b.add_item(
        "journalArticle",
        {"title": "Complications related to deep venous thrombosis prophylaxis in trauma", "date": "2011"},
        [("Indraneel", "Datta", "author")],
    )
    _, keys["dvt_pdf"] = b.add_attachment(dvt, "datta.pdf", (pdf_dir / "cermine" / "test1.pdf").read_bytes())
    coffee, keys["coffee"] = b.add_item("webpage", {"title": "Coffee prices", "websiteTitle": "Agri News"})
    _, keys["coffee_html"] = b.add_attachment(coffee, "coffee.html", SNAPSHOT, "text/html")
    _, keys["loose_pdf"] = b.add_attachment(
        None,
        "loose.pdf",
        make.text_pdf(
            [("Notes", ["Boron nitride nanosheets glow blue under ultraviolet light because of carbon defects."])]
        ),
    )
    book, keys["book"] = b.add_item("book", {"title": "Protein folding", "date": "2015"})
    _, keys["note"] = b.add_note(book, "<p>Chaperones in the endoplasmic reticulum use ATP to fold glycoproteins.</p>")
    secret, keys["secret"] = b.add_item("report", {"title": "Secret report"})
    _, keys["encrypted"] = b.add_attachment(secret, "secret.pdf", make.encrypted_pdf())
    broken, keys["broken"] = b.add_item("thesis", {"title": "Broken thesis"})
    _, keys["corrupt"] = b.add_attachment(broken, "broken.pdf", make.corrupt_pdf())
    trashed, keys["trashed"] = b.add_item("journalArticle", {"title": "Trashed paper about volcanoes"})
    _, keys["trashed_pdf"] = b.add_attachment(
        trashed,
        "volcano.pdf",
        make.text_pdf(
            [("Eruptions", ["Strombolian eruptions of basaltic volcanoes eject lava bombs every few minutes."])]
        ),
    )
    b.trash(trashed)
    group = b.add_group(99, "Yeast lab")
    yeast, keys["yeast"] = b.add_item("journalArticle", {"title": "Heat shock in yeast"}, library_id=group)
    _, keys["yeast_pdf"] = b.add_attachment(yeast, "yeast.pdf", make.text_pdf(YEAST), library_id=group)
    b.close()
    return b, keys


async def started(root, builder) -> RetrievalService:
    svc = RetrievalService(RetrievalSettings(zotero_dir=builder.dir, data_dir=root / "data", embedding_device="cpu"))
    await svc.start()
    await svc._ingest_task
    return svc


@pytest.fixture(scope="module")
def zotero(tmp_path_factory, schema_dir, pdf_dir, make):
    return build_library(tmp_path_factory.mktemp("lib"), schema_dir, pdf_dir, make)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(tmp_path_factory, zotero):
    with pytest.MonkeyPatch.context() as mp:  # never discover a real ~/Zotero
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        svc = await started(tmp_path_factory.mktemp("svc"), zotero[0])
    yield svc
    await svc.close()


async def test_ingest_reports_progress_and_failures_by_reason(service, zotero):
    _, keys = zotero
    status = service.status("local")
    ingest = status["ingest"]
    assert status["state"] == "done" and status["ready"]
    assert ingest["libraries"] == 2
    assert ingest["sources_total"] == 8  # 7 attachments (not the trashed one) + 1 note
    assert ingest["indexed"] == 6 and ingest["sources_done"] == 8
    assert ingest["failures_by_reason"] == {"encrypted": 1, "corrupt": 1}
    failed = {f["source_key"]: f for f in ingest["failures"]}
    assert failed[keys["encrypted"]]["title"] == "Secret report"
    assert failed[keys["corrupt"]]["item_key"] == keys["broken"]
    assert status["chunks_indexed"] == ingest["chunks"] > 6


async def test_search_returns_evidence_with_parent_item_metadata(service, zotero):
    _, keys = zotero
    reply = await service.search(request("How well does graphene conduct heat? [1]"))
    assert isinstance(reply, EvidenceRetrieved) and reply.error is None
    assert reply.turn_id == "turn1" and reply.message_id.endswith("-r")
    top = reply.chunks[0]
    assert top.item_key == keys["graphene"] and top.attachment_key == keys["graphene_pdf"]
    assert top.title == "Thermal conductivity of graphene" and top.year == 2008
    assert top.publication == "Nano Letters"
    assert [(c.first_name, c.last_name) for c in top.creators] == [("Alexander", "Balandin")]
    assert top.section in ("Abstract", "Introduction", "Methods") and "graphene" in top.text.lower()
    assert {c.kind for c in reply.chunks if c.item_key == keys["graphene"]} == {"abstract", "text"}
    assert len(reply.chunks) <= 5
    assert len({c.chunk_id for c in reply.chunks}) == len(reply.chunks)


async def test_every_kind_of_source_is_searchable(service, zotero):
    _, keys = zotero
    cases = {
        "Arabica coffee price after the frost in Brazil": (keys["coffee"], "text"),
        "low molecular weight heparin bleeding in trauma patients": (keys["dvt"], "abstract"),
        "chaperones folding glycoproteins in the endoplasmic reticulum": (keys["book"], "note"),
        "why do boron nitride nanosheets glow blue": (keys["loose_pdf"], "text"),  # no parent: its own key
    }
    for query, (item_key, kind) in cases.items():
        top = (await service.search(request(query))).chunks[0]
        assert (top.item_key, top.kind) == (item_key, kind), query


async def test_trashed_items_are_not_indexed(service):
    reply = await service.search(request("Strombolian eruptions of basaltic volcanoes", top_k=20))
    assert all("volcano" not in c.text.lower() for c in reply.chunks)


async def test_library_id_narrows_to_a_group_library(service, zotero):
    _, keys = zotero
    group = await service.search(request("heat", library="group-99", top_k=20))
    assert {c.item_key for c in group.chunks} == {keys["yeast"]}
    assert {c.library_id for c in group.chunks} == {"group-99"}  # the plugin opens it in that library
    personal = await service.search(request("heat shock proteins in yeast", library="user", top_k=20))
    assert keys["yeast"] not in {c.item_key for c in personal.chunks}


async def test_another_user_gets_a_clear_refusal_never_this_library(service):
    reply = await service.search(request("graphene heat", user="mallory"))
    assert reply.chunks == []
    assert reply.error is not None and reply.error.code == "not_available" and reply.error.service == "retrieval"
    assert "not indexed yet" in reply.error.message


async def test_search_before_start_says_why(tmp_path, no_home_zotero):
    svc = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=tmp_path / "d"))
    reply = await svc.search(request("anything"))
    assert reply.error.code == "not_available" and "starting" in reply.error.message


async def test_reingest_is_incremental(tmp_path, schema_dir, pdf_dir, make, no_home_zotero):
    builder, keys = build_library(tmp_path, schema_dir, pdf_dir, make)
    service = await started(tmp_path, builder)
    first = service.status("local")["chunks_indexed"]
    again = await service.ingest_zotero(builder.dir, "local")
    assert (again.indexed, again.unchanged, again.removed, again.chunks) == (0, 6, 0, 0)
    assert service.status("local")["chunks_indexed"] == first

    # change one file, trash one item, delete another item (and its note) from the library
    builder.replace_attachment_file(
        keys["graphene_pdf"],
        "balandin.pdf",
        _pdf_about("Graphene oxide is a thermal insulator with poor conductivity."),
    )
    con = sqlite3.connect(builder.dir / "zotero.sqlite")
    con.execute("PRAGMA foreign_keys=ON")  # as in Zotero: rows of a deleted item go with it
    con.execute("INSERT INTO deletedItems (itemID) SELECT itemID FROM items WHERE key=?", (keys["coffee"],))
    con.execute("DELETE FROM items WHERE key IN (?, ?)", (keys["book"], keys["note"]))
    con.commit()
    con.close()
    third = await service.ingest_zotero(builder.dir, "local")
    assert (third.indexed, third.removed) == (1, 2)
    assert third.unchanged == 3  # dvt, loose pdf, yeast
    chunks = (await service.search(request("graphene thermal conductivity", top_k=20))).chunks
    graphene = [c for c in chunks if c.item_key == keys["graphene"]]
    assert graphene and all("Raman" not in c.text for c in graphene)  # the old version is gone
    assert any("insulator" in c.text for c in graphene)
    gone = (await service.search(request("Arabica coffee price frost", top_k=20))).chunks
    assert keys["coffee"] not in {c.item_key for c in gone}
    assert keys["book"] not in {c.item_key for c in gone}
    await service.close()


def _pdf_about(text: str) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text, fontsize=11)
    return doc.tobytes()


async def test_without_a_zotero_library_the_local_user_is_told_how_to_point_to_one(tmp_path, no_home_zotero):
    svc = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=tmp_path / "d"))
    await svc.start()
    try:
        reply = await svc.search(request("anything"))
    finally:
        await svc.close()
    assert reply.error.code == "not_available"
    assert "ZOCRATES_ZOTERO_DIR" in reply.error.message and "zotero.sqlite" in reply.error.message


def one_paper_library(tmp_path, schema_dir, rescan_interval_s: float):
    """A Zotero library holding one paper (heat shock in yeast), and a retrieval service over it
    that checks the database for changes every `rescan_interval_s` (0: never)."""
    builder = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    first, _ = builder.add_item("journalArticle", {"title": "Heat shock in yeast", "date": "2001"})
    builder.add_attachment(first, "yeast.pdf", _pdf_about("Heat shock proteins refold denatured yeast enzymes."))
    settings = RetrievalSettings(
        zotero_dir=builder.dir, data_dir=tmp_path / "data", embedding_device="cpu", rescan_interval_s=rescan_interval_s
    )
    return builder, RetrievalService(settings)


def import_a_paper(builder, pdf_dir) -> str:
    """What Zotero writes when the user imports Datta 2010 (a PDF on DVT prophylaxis); its key."""
    new, key = builder.add_item("journalArticle", {"title": "Complications of DVT prophylaxis", "date": "2010"})
    builder.add_attachment(new, "datta.pdf", (pdf_dir / "cermine" / "test1.pdf").read_bytes())
    return key


async def test_a_paper_imported_into_zotero_becomes_searchable_without_a_restart(
    tmp_path, schema_dir, pdf_dir, no_home_zotero
):
    builder, svc = one_paper_library(tmp_path, schema_dir, rescan_interval_s=0.2)
    await svc.start()
    try:
        await svc._ingest_task
        key = import_a_paper(builder, pdf_dir)

        async def found() -> bool:  # the rescan notices the changed database and re-ingests
            chunks = (await svc.search(request("inferior vena cava filter complications"))).chunks
            return any(c.item_key == key for c in chunks)

        assert await eventually(found, 30, interval=0.2)
    finally:
        await svc.close()


async def test_a_rescan_request_indexes_an_import_at_once_even_while_an_ingest_runs(
    tmp_path, schema_dir, pdf_dir, no_home_zotero
):
    import asyncio

    from zocrates_contracts import LibraryStatusRequested

    builder, svc = one_paper_library(tmp_path, schema_dir, rescan_interval_s=0)  # no periodic rescan
    await svc.start()
    try:
        # The import lands while the first ingest may still be reading the database: the rescan
        # runs after it, so the new paper is indexed either way.
        key = import_a_paper(builder, pdf_dir)
        ask = dict(turn_id="t", session_id="s", user_id="local", reply_to="zocrates.reply.gw.library")
        status = await svc.library_status(LibraryStatusRequested(**ask, rescan=True))
        assert status.source == "zotero_dir" and status.state == "running"
        await asyncio.wait_for(svc._local_rescan, 120)
        chunks = (await svc.search(request("inferior vena cava filter complications"))).chunks
        assert any(c.item_key == key for c in chunks)
        status = await svc.library_status(LibraryStatusRequested(**ask))
        assert (status.state, status.items, status.attachments, status.indexed) == ("done", 2, 2, 2)
        other = await svc.library_status(LibraryStatusRequested(**ask | {"user_id": "bob"}, rescan=True))
        assert other.source == "none" and svc._local_rescan.done()  # bob has no library: nothing ran
    finally:
        await svc.close()
