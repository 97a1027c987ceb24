"""The `<retrieved_evidence>` block the synthesizer reads: chunks numbered 1..N in rank order."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from zocrates_citations.authors import format_authors
from zocrates_contracts import EvidenceChunk

# A passage that happens to contain our own tags must not close or open a chunk early.
_STRUCTURAL_TAG_RE = re.compile(r"<(?=/?\s*(?:chunk|retrieved_evidence)\b)", re.IGNORECASE)
_WHITESPACE_RE = re.compile(r"\s+")


def _attribute(name: str, value: object) -> str:
    text = _WHITESPACE_RE.sub(" ", str(value)).strip()
    return f' {name}="{escape(text, quote=True)}"'


def format_evidence_xml(chunks: Sequence[EvidenceChunk]) -> str:
    """The evidence block: `<chunk index=...>` 1..N in the given order, full chunk text.

    Attributes are escaped and empty ones omitted; item and attachment keys never appear.
    The passage text is kept verbatim (tables, math and code stay readable) except that a
    literal `<chunk` or `<retrieved_evidence` tag inside it is escaped.
    """
    lines = ["<retrieved_evidence>"]
    for index, chunk in enumerate(chunks, start=1):
        attributes = _attribute("index", index)
        if chunk.title.strip():
            attributes += _attribute("title", chunk.title)
        authors = format_authors(chunk.creators)
        if authors:
            attributes += _attribute("authors", authors)
        if chunk.year is not None:
            attributes += _attribute("year", chunk.year)
        if chunk.section and chunk.section.strip():
            attributes += _attribute("section", chunk.section)
        attributes += _attribute("type", chunk.kind or "text")
        body = _STRUCTURAL_TAG_RE.sub("&lt;", chunk.text.strip("\n"))
        lines.append(f"  <chunk{attributes}>\n{body}\n  </chunk>")
    lines.append("</retrieved_evidence>")
    return "\n".join(lines)
