"""A researcher's annotations (Zotero 7 itemAnnotations) are indexed as chunks of the annotated
file's parent item, one per annotation, in the section "Annotations > p. <label>", on its page
with the label Zotero gave it."""

from __future__ import annotations

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import Pages
from zocrates_retrieval.adapters.store import EdgeStore, Tenant, indexed_sources
from zocrates_retrieval.adapters.zotero import read_library
from zocrates_retrieval.ingest import Ingestor
from zocrates_retrieval.search import Searcher, to_evidence

HIGHLIGHT = "Suspended single-layer graphene conducts heat at up to 5300 W/mK near room temperature."
COMMENT = "Compare with copper (about 400 W/mK) for the thesis intro."


def build(tmp_path, schema_dir, make):
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    article, article_key = b.add_item(
        "journalArticle",
        {"title": "Superior thermal conductivity of graphene", "date": "2008"},
        [("Alexander", "Balandin", "author")],
    )
    pdf_id, pdf_key = b.add_attachment(article, "balandin.pdf", make.text_pdf([("Abstract", ["Raman thermometry."])]))
    ids = {
        "highlight": b.add_annotation(pdf_id, 1, text=HIGHLIGHT, comment=COMMENT, page_label="903", page_index=1),
        "note": b.add_annotation(
            pdf_id, 2, comment="Check the laser power calibration.", page_label="904", page_index=2
        ),
        "ink": b.add_annotation(pdf_id, 4, page_label="904", page_index=2),  # no words: nothing to index
        "trashed": b.add_annotation(pdf_id, 5, text="An underline I deleted.", page_index=0),
    }
    b.trash(ids["trashed"][0])
    gone, _ = b.add_item("journalArticle", {"title": "Retracted"})
    gone_pdf, _ = b.add_attachment(gone, "r.pdf", make.text_pdf([("Abstract", ["Retracted text."])]))
    b.add_annotation(gone_pdf, 1, text="Highlight in a trashed paper.", page_index=0)
    b.trash(gone)
    return b, {"article": article_key, "pdf": pdf_key, "pdf_id": pdf_id}


def test_annotations_are_read_per_attachment_with_page_and_label(tmp_path, schema_dir, make):
    b, keys = build(tmp_path, schema_dir, make)
    b.close()
    sources = [s for s in read_library(b.dir).sources if s.kind == "annotations"]
    assert len(sources) == 1  # the trashed paper's annotations are not indexed
    src = sources[0]
    assert src.key == f"{keys['pdf']}-annotations" and src.attachment_key == keys["pdf"]
    assert src.item.key == keys["article"]  # resolved to the parent item, as the file is
    assert [(a.type, a.text, a.comment, a.page, a.page_label) for a in src.annotations] == [
        ("highlight", HIGHLIGHT, COMMENT, 2, "903"),
        ("note", "", "Check the laser power calibration.", 3, "904"),
    ]


def test_annotations_are_searchable_and_cite_their_page(tmp_path, schema_dir, make, embedder):
    b, keys = build(tmp_path, schema_dir, make)
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        ingestor = Ingestor(store, embedder)
        progress = ingestor.ingest_zotero(b.dir, "u1")
        assert progress.state == "done" and progress.failures == []
        hits = Searcher(store, embedder).search(
            Tenant("u1"), "how does graphene's conductivity compare with copper?", 5
        )
        evidence = [to_evidence(h) for h in hits]
        top = next(e for e in evidence if e.kind == "annotation")
        assert top.text == f"“{HIGHLIGHT}”\nComment: {COMMENT}"
        assert top.section == "Annotations > p. 903" and top.pages == Pages(index=1, label="903")
        assert top.item_key == keys["article"] and top.attachment_key == keys["pdf"]
        assert top.title == "Superior thermal conductivity of graphene"

        # a new comment re-indexes the annotations; deleting them all removes them from the index
        b.add_annotation(keys["pdf_id"], 1, text="Phonon mean free path is about 775 nm.", page_index=3)
        progress = ingestor.ingest_zotero(b.dir, "u1")
        assert progress.indexed == 1 and progress.unchanged == 1
        b.con.execute("DELETE FROM itemAnnotations")
        b.con.commit()
        progress = ingestor.ingest_zotero(b.dir, "u1")
        assert progress.removed == 1
        assert {key for _, key in indexed_sources(store, Tenant("u1"))} == {keys["pdf"]}
    finally:
        b.close()
        store.close()
