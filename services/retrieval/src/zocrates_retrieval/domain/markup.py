"""HTML, plain text and markdown to structured text: paragraphs with their section path.

HTML headings (h1-h6) and markdown `#` headings give the section path; HTML `<table>`s of data
become table blocks like a PDF's, while tables that lay out a page are read as paragraphs.
"""

from __future__ import annotations

import re

from zocrates_retrieval.domain.document import EMPTY, Block, ConversionError, Document, table_block
from zocrates_retrieval.domain.tables import Table, tidy

_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_BLOCKS = ("p", "li", "blockquote", "pre", "figcaption", "td", "th", "dd", "dt", "caption")


def convert_html(html: str | bytes) -> Document:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    meta = {m.get("name", "").lower(): m.get("content", "") for m in soup.find_all("meta") if m.get("name")}
    for tag in soup(["script", "style", "noscript", "nav", "footer", "header", "form", "svg", "button", "aside"]):
        tag.decompose()
    doc = Document(pages=0)
    doc.title = meta.get("citation_title") or (soup.title.get_text(strip=True) if soup.title else "") or None
    authors = [m.get("content", "") for m in soup.find_all("meta", attrs={"name": "citation_author"})]
    doc.authors = "; ".join(a for a in authors if a) or None
    doc.doi = meta.get("citation_doi") or None
    stack: list[tuple[int, str]] = []
    data_tables = [t for t in soup.find_all("table") if _is_data_table(t)]
    for el in soup.find_all(_HEADINGS + _BLOCKS + ("table",)):
        if el.name == "table":
            if el in data_tables and not el.find_parent(_BLOCKS + ("table",)):
                rows = tidy([[_clean(c) for c in tr.find_all(["td", "th"])] for tr in el.find_all("tr")])
                caption = el.find("caption")
                if rows:
                    table = Table(rows, _clean(caption) if caption else "")
                    doc.blocks.append(table_block(table, tuple(t for _, t in stack), None))
            continue
        if el.find_parent(_BLOCKS) or any(t in data_tables for t in el.find_parents("table")):
            continue  # its text is part of the enclosing block or table
        text = _clean(el)
        if not text:
            continue
        if el.name in _HEADINGS:
            level = int(el.name[1])
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
        else:
            doc.blocks.append(Block(text, tuple(t for _, t in stack)))
    if not doc.blocks:  # pages built from bare <div>s: fall back to text lines
        for para in re.split(r"\n\s*\n", soup.get_text("\n")):
            if para := re.sub(r"\s+", " ", para).strip():
                doc.blocks.append(Block(para))
    if not doc.blocks:
        raise ConversionError(EMPTY, "the page holds no text")
    return doc


def _is_data_table(table) -> bool:
    """A table of data, not one that lays out a page (whose cells hold paragraphs, headings
    or further tables: those are read as ordinary blocks)."""
    return (
        len(table.find_all("tr")) >= 2
        and table.find(["table", "p", "div", "ul", "ol", "blockquote", *_HEADINGS]) is None
    )


def _clean(el) -> str:
    return re.sub(r"\s+", " ", el.get_text(" ", strip=True)).strip()


def convert_text(text: str, markdown: bool) -> Document:
    doc = Document(pages=0)
    stack: list[tuple[int, str]] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        if markdown and (m := re.match(r"^(#{1,6})\s+(.+?)\s*#*$", para.splitlines()[0])):
            level = len(m.group(1))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, m.group(2)))
            para = "\n".join(para.splitlines()[1:]).strip()
            if not para:
                continue
        doc.blocks.append(Block(re.sub(r"\s+", " ", para), tuple(t for _, t in stack)))
    if not doc.blocks:
        raise ConversionError(EMPTY, "the file holds no text")
    return doc


def decode_text(data: bytes) -> str:
    """A text file's bytes as UTF-8, else Windows-1252, else Latin-1 (which never fails)."""
    for encoding in ("utf-8", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")
