"""Printed page numbers: each page of a PDF is named by the PDF's own page labels, else by the
number its running header or footer prints (when that agrees with the page's index on several
pages), else by its index + 1, marked as not printed. Chunks carry their pages to the evidence,
with Zotero's label for an annotation."""

from __future__ import annotations

import pymupdf
import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import EvidenceRetrieved, Pages
from zocrates_retrieval.adapters.store import EdgeStore, Tenant
from zocrates_retrieval.convert import convert_file
from zocrates_retrieval.domain.document import page_span
from zocrates_retrieval.ingest import Ingestor
from zocrates_retrieval.search import Searcher, to_evidence


def labels_of(path) -> dict[int, str]:
    return convert_file(path, "application/pdf").page_labels


def test_a_journal_article_is_numbered_by_the_page_numbers_in_its_footer(pdf_dir):
    """Clinical Science 126, 305-313: no page labels in the PDF, the number in the footer of each
    page; the four pages of supplementary data after it print none and are left unnamed."""
    labels = labels_of(pdf_dir / "cermine" / "example3.pdf")
    assert labels == {n: str(304 + n) for n in range(1, 10)}


def test_the_pdfs_own_page_labels_come_first(pdf_dir):
    """This BMC article's PDF labels its first page "0" and the next ones 1 to 9 (Zotero's reader
    shows the same), though its header prints "Page 2 of 10" on the second."""
    labels = labels_of(pdf_dir / "cermine" / "example2.pdf")
    assert labels == {n: str(n - 1) for n in range(1, 11)}


def test_page_labels_that_only_count_the_pages_give_way_to_the_printed_numbers(pdf_dir):
    """An excerpt of an 11-page article, its pages 1, 9, 10 and 11: the PDF labels them 1 to 4,
    which says nothing; the headers print "Page 9 of 11" to "Page 11 of 11". The first page
    prints no number of its own and stays unnamed rather than guessed."""
    assert labels_of(pdf_dir / "cermine" / "test1.pdf") == {2: "9", 3: "10", 4: "11"}


def test_header_numbers_equal_to_the_index_are_printed_numbers_too(pdf_dir):
    labels = labels_of(pdf_dir / "papermage" / "2203.00130v1.pdf")
    assert labels == {n: str(n) for n in range(2, 40)}  # the title page prints none


def numbered_pdf(tmp_path, footers: list[str], header: str = "") -> object:
    """A PDF of one paragraph a page, `footers[i]` printed at the bottom of page i + 1."""
    doc = pymupdf.open()
    for n, footer in enumerate(footers, start=1):
        page = doc.new_page()
        if header:
            page.insert_text((72, 40), header, fontsize=8)
        page.insert_text((72, 120), f"Paragraph on page {n} about thermal transport in thin films.", fontsize=10)
        if footer:
            page.insert_text((300, 800), footer, fontsize=8)
    path = tmp_path / "numbered.pdf"
    doc.save(path)
    return path


def test_a_lone_number_that_disagrees_with_its_neighbours_is_not_trusted(tmp_path):
    # a misprint on page 3 does not move the others; page 3 lies between pages that agree
    path = numbered_pdf(tmp_path, ["1201", "1202", "7", "1204", "1205"])
    assert labels_of(path) == {n: str(1200 + n) for n in range(1, 6)}
    # one number on one page is not a page number, nor is a year on every page
    assert labels_of(numbered_pdf(tmp_path, ["", "", "1203", "", ""])) == {}
    assert labels_of(numbered_pdf(tmp_path, ["", "", "", "", ""], header="Journal of Films 2004, 12")) == {}
    # two agreeing pages of five are not enough
    assert labels_of(numbered_pdf(tmp_path, ["", "88", "89", "", ""])) == {}


def test_a_passage_names_its_first_page_and_its_last_when_it_runs_on():
    labels = {2: "306", 3: "307"}
    assert page_span(2, 2, labels) == Pages(index=1, label="306")
    assert page_span(2, 3, labels) == Pages(index=1, label="306", last_index=2, last_label="307")
    assert page_span(2, 3, labels).shown() == "pp. 306–307" and page_span(3, 3, labels).shown() == "p. 307"
    unnamed = page_span(5, None, labels)  # no printed number: its index + 1, and said so
    assert unnamed == Pages(index=4, label="5", printed=False) and unnamed.shown() == "p. 5"
    assert page_span(None, None, labels) is None  # a note, a web page


def test_evidence_from_a_journal_article_carries_its_printed_pages(tmp_path, schema_dir, pdf_dir, embedder):
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    article, article_key = b.add_item("journalArticle", {"title": "Fragment-based design of ACE inhibitors"})
    b.add_attachment(article, "douglas.pdf", (pdf_dir / "cermine" / "example3.pdf").read_bytes())
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        assert Ingestor(store, embedder).ingest_zotero(b.dir, "u1").state == "done"
        hits = Searcher(store, embedder).search(Tenant("u1"), "crystal structure of N-ACE with 33RE", 20)
        evidence = [to_evidence(h) for h in hits]
        body = [e.pages for e in evidence if e.pages and e.pages.printed]
        assert body, "passages of the article's nine numbered pages"
        for pages in body:
            assert int(pages.label) == 305 + pages.index
            assert pages.last_index is None or int(pages.last_label) == 305 + pages.last_index > int(pages.label)
        assert all(e.pages is not None for e in evidence)  # every passage of a PDF has a page
        # what retrieval replies with reads back the same from the bus
        reply = EvidenceRetrieved(turn_id="t", session_id="s", user_id="u1", chunks=evidence)
        assert EvidenceRetrieved.model_validate_json(reply.model_dump_json()).chunks == evidence
    finally:
        store.close()


@pytest.mark.parametrize("position", ['{"pageIndex": 4, "rects": [[1, 2, 3, 4]]}', "{}", "not json", "[1]"])
def test_an_annotation_without_a_page_index_has_no_page(tmp_path, schema_dir, make, position):
    from zocrates_retrieval.adapters.zotero import read_library

    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    article, _ = b.add_item("journalArticle", {"title": "Graphene"})
    pdf_id, _ = b.add_attachment(article, "g.pdf", make.text_pdf([("Abstract", ["Raman thermometry."])]))
    annotation_id, _ = b.add_annotation(pdf_id, 1, text="Heat flows.", page_label="1236", page_index=4)
    b.con.execute("UPDATE itemAnnotations SET position = ? WHERE itemID = ?", (position, annotation_id))
    b.con.commit()
    b.close()
    (src,) = [s for s in read_library(b.dir).sources if s.kind == "annotations"]
    assert [(a.page, a.page_label) for a in src.annotations] == [(5 if "pageIndex" in position else None, "1236")]
