"""EPUB books are indexed like HTML snapshots: each document of the reading order, its headings
the sections; a broken book is reported, not fatal."""

from __future__ import annotations

import zipfile

import pytest

from harness.zotero import ZoteroLibraryBuilder
from zocrates_retrieval.adapters.store import EdgeStore, Tenant
from zocrates_retrieval.convert import convert_file
from zocrates_retrieval.domain.document import CORRUPT, ConversionError
from zocrates_retrieval.ingest import Ingestor
from zocrates_retrieval.search import Searcher, to_evidence

CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
OPF = """<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:title>Soil Microbes</dc:title><dc:creator>Ada Lovelace</dc:creator><dc:creator>Jan Born</dc:creator>
  </metadata>
  <manifest>
    <item id="cover" href="cover.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/>
    <item id="gone" href="text/missing.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
  </manifest>
  <spine><itemref idref="cover" linear="no"/><itemref idref="c2"/><itemref idref="gone"/><itemref idref="c1"/></spine>
</package>"""


def chapter(heading: str, sub: str, text: str) -> str:
    return (
        f'<html xmlns="http://www.w3.org/1999/xhtml"><head><title>{heading}</title></head><body>'
        f"<h1>{heading}</h1><h2>{sub}</h2><p>{text}</p></body></html>"
    )


def epub(path, files: dict[str, str]) -> None:
    with zipfile.ZipFile(path, "w") as book:
        book.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        for name, text in files.items():
            book.writestr(name, text)


BOOK = {
    "META-INF/container.xml": CONTAINER,
    "OEBPS/content.opf": OPF,
    "OEBPS/cover.xhtml": chapter("Cover", "Blurb", "A cover page outside the reading order."),
    "OEBPS/text/ch1.xhtml": chapter(
        "Nitrogen", "Fixation", "Rhizobia in root nodules fix atmospheric nitrogen for legumes."
    ),
    "OEBPS/text/ch2.xhtml": chapter(
        "Carbon", "Respiration", "Soil respiration doubled when the plots were warmed by 4 degrees."
    ),
}


def test_an_epub_reads_in_spine_order_with_headings_as_sections(tmp_path):
    epub(tmp_path / "book.epub", BOOK)
    doc = convert_file(tmp_path / "book.epub", "application/epub+zip")
    assert doc.title == "Soil Microbes" and doc.authors == "Ada Lovelace; Jan Born"
    texts = [(b.section, b.text) for b in doc.blocks if "." in b.text]
    assert texts == [
        (("Carbon", "Respiration"), "Soil respiration doubled when the plots were warmed by 4 degrees."),
        (("Nitrogen", "Fixation"), "Rhizobia in root nodules fix atmospheric nitrogen for legumes."),
    ]  # the spine's order, the non-linear cover and the missing file left out


@pytest.mark.parametrize(
    "files",
    [
        {"META-INF/container.xml": CONTAINER},  # no package document
        {"META-INF/container.xml": "<container", "OEBPS/content.opf": OPF},  # broken XML
    ],
)
def test_a_broken_epub_is_reported_corrupt(tmp_path, files):
    epub(tmp_path / "book.epub", files)
    with pytest.raises(ConversionError) as failed:
        convert_file(tmp_path / "book.epub", "application/epub+zip")
    assert failed.value.reason == CORRUPT
    (tmp_path / "not.epub").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ConversionError, match="not a readable EPUB"):
        convert_file(tmp_path / "not.epub", "application/epub+zip")


def test_an_epub_attachment_is_searchable_with_its_chapter(tmp_path, schema_dir, embedder):
    epub(tmp_path / "book.epub", BOOK)
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    item, key = b.add_item("book", {"title": "Soil Microbes"})
    b.add_attachment(item, "book.epub", (tmp_path / "book.epub").read_bytes(), "application/epub+zip")
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    try:
        progress = Ingestor(store, embedder).ingest_zotero(b.dir, "u1")
        assert progress.state == "done" and progress.failures == [] and progress.indexed == 1
        top = to_evidence(
            Searcher(store, embedder).search(Tenant("u1"), "what happens to soil respiration under warming?", 3)[0]
        )
        assert top.item_key == key and top.section == "Carbon > Respiration" and "doubled" in top.text
    finally:
        store.close()
