"""Files to structured text, by content type: PDFs (`pdf`), EPUB books (`epub`), HTML, plain
text and markdown (`markup`), each a `Document` (`document`).

Conversion of files we did not write runs in a separate process (`isolation.ConverterPool`)
with an address-space cap and a wall-clock limit (RELIABILITY.md section 4): a decompression
bomb or a parser crash costs one file, not the service.
"""

from __future__ import annotations

from pathlib import Path

from zocrates_retrieval.adapters.epub import convert_epub
from zocrates_retrieval.adapters.pdf import convert_pdf
from zocrates_retrieval.domain.document import CORRUPT, MISSING, UNSUPPORTED, ConversionError, Document
from zocrates_retrieval.domain.markup import convert_html, convert_text, decode_text

EPUB = "application/epub+zip"


def convert_file(path: Path, content_type: str, max_pages: int = 2000) -> Document:
    """Convert one file by its content type (as Zotero recorded it, checked against its bytes)."""
    path = Path(path)
    try:
        head = path.open("rb").read(1024)
    except OSError as exc:
        raise ConversionError(MISSING, f"cannot read {path}: {exc}") from exc
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == "application/pdf" or b"%PDF-" in head:
        if b"%PDF-" not in head:
            raise ConversionError(CORRUPT, "no %PDF- header in the first 1024 bytes")
        return convert_pdf(path, max_pages)
    if ctype in ("text/html", "application/xhtml+xml"):
        return convert_html(path.read_bytes())
    if ctype == EPUB or path.suffix.lower() == ".epub":
        return convert_epub(path)
    if ctype in ("text/plain", "text/markdown", "text/x-markdown") or path.suffix.lower() in (".md", ".txt"):
        markdown = ctype != "text/plain" or path.suffix.lower() in (".md", ".markdown")
        return convert_text(decode_text(path.read_bytes()), markdown=markdown)
    raise ConversionError(UNSUPPORTED, f"content type {content_type or 'unknown'!r} is not indexed")
