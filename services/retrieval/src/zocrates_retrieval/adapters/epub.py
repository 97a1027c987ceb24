"""EPUB files to structured text: each document of the reading order read as HTML (`markup`),
its headings the sections.

An EPUB is a zip: `META-INF/container.xml` names the package document (OPF), whose manifest
lists the files and whose spine gives the reading order. Only the spine's XHTML documents are
read, each at most `MAX_CHAPTER_BYTES` and all together at most `MAX_TOTAL_BYTES` uncompressed
(the converter's child process caps memory and time besides: a zip bomb costs one file).
"""

from __future__ import annotations

import posixpath
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from zocrates_retrieval.domain.document import CORRUPT, EMPTY, ConversionError, Document
from zocrates_retrieval.domain.markup import convert_html

MAX_CHAPTER_BYTES = 16 << 20
MAX_TOTAL_BYTES = 256 << 20
_XHTML = ("application/xhtml+xml", "text/html")
_NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
}


def convert_epub(path: Path) -> Document:
    try:
        with zipfile.ZipFile(path) as book:
            opf_path = _package_path(book)
            opf = ElementTree.fromstring(book.read(opf_path))
            chapters = _reading_order(opf, posixpath.dirname(opf_path))
            doc = Document(pages=0)
            doc.title = _text(opf.find(".//dc:title", _NS)) or None
            doc.authors = "; ".join(filter(None, (_text(c) for c in opf.findall(".//dc:creator", _NS)))) or None
            total = 0
            for name in chapters:
                try:
                    info = book.getinfo(name)
                except KeyError:
                    continue  # listed in the manifest, missing from the zip: read the rest
                total += info.file_size
                if info.file_size > MAX_CHAPTER_BYTES or total > MAX_TOTAL_BYTES:
                    raise ConversionError(CORRUPT, f"{name} makes the book larger than this server reads")
                doc.blocks += convert_html(book.read(name)).blocks
    except (zipfile.BadZipFile, ElementTree.ParseError, KeyError, ValueError) as exc:
        raise ConversionError(CORRUPT, f"not a readable EPUB: {exc}") from exc
    if not doc.blocks:
        raise ConversionError(EMPTY, "the EPUB holds no text")
    return doc


def _package_path(book: zipfile.ZipFile) -> str:
    container = ElementTree.fromstring(book.read("META-INF/container.xml"))
    rootfile = container.find(".//c:rootfile", _NS)
    if rootfile is None or not rootfile.get("full-path"):
        raise ValueError("META-INF/container.xml names no package document")
    return rootfile.get("full-path")


def _reading_order(opf: ElementTree.Element, base: str) -> list[str]:
    """The zip names of the spine's XHTML documents, in reading order."""
    manifest = {
        item.get("id"): item
        for item in opf.findall(".//opf:manifest/opf:item", _NS)
        if item.get("media-type") in _XHTML and item.get("href")
    }
    names = []
    for ref in opf.findall(".//opf:spine/opf:itemref", _NS):
        item = manifest.get(ref.get("idref"))
        if item is not None and ref.get("linear") != "no":
            names.append(posixpath.normpath(posixpath.join(base, item.get("href").split("#")[0])))
    return names


def _text(element: ElementTree.Element | None) -> str:
    return " ".join((element.text or "").split()) if element is not None else ""
