"""What conversion makes of a file: a `Document` of `Block`s (paragraphs, tables, Zotero
annotations) with their section path and page, or a `ConversionError` with its reason.

The PDF reader (`pdf`), the HTML and text readers (`markup`), the isolated converter
(`isolation`) and chunking all speak these types; none of them imports another for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from zocrates_contracts import Pages
from zocrates_retrieval.domain.tables import Table

#: Failure reasons reported in the ingest status.
ENCRYPTED, CORRUPT, EMPTY, SCANNED, UNSUPPORTED, TIMEOUT, TOO_LARGE, MISSING = (
    "encrypted",
    "corrupt",
    "empty",
    "scanned",
    "unsupported",
    "timeout",
    "too_large",
    "missing_file",
)


class ConversionError(Exception):
    """A file that cannot be turned into text, with a machine-readable `reason`."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class Block:
    """A paragraph, an item of a list without bullets, a table or a Zotero annotation of a
    document (`kind`: "text", "list_item", "table", "annotation").

    A table's text is its caption and header, then one line per row; `head_lines` says how
    many leading lines (caption, header) to repeat when it must be split into chunks."""

    text: str
    section: tuple[str, ...] = ()
    page: int | None = None  # 1-based
    kind: str = "text"
    head_lines: int = 0


@dataclass
class Document:
    blocks: list[Block] = field(default_factory=list)
    pages: int = 0
    #: The number printed on a page, by its 1-based index (`Block.page`), where the document
    #: says it: a PDF's page labels or running header numbers, a Zotero annotation's label.
    page_labels: dict[int, str] = field(default_factory=dict)
    title: str | None = None  # the document's own metadata: a fallback for empty Zotero fields
    authors: str | None = None
    doi: str | None = None


def table_block(table: Table, section: tuple[str, ...], page: int | None) -> Block:
    """One block for a whole table: caption, header row, rows (see `Block.head_lines`)."""
    rows = [" | ".join(cells) for cells in table.rows]
    head = [table.caption] if table.caption else []
    return Block("\n".join(head + rows), section, page, "table", head_lines=len(head) + 1)


def page_span(first: int | None, last: int | None, labels: dict[int, str]) -> Pages | None:
    """The `Pages` of a passage on the 1-based pages `first` to `last`, named by `labels`
    (see `Document.page_labels`); a page without a label is called by its index + 1, and then
    the span says it is not printed. None for a passage without a page (notes, web pages)."""
    if first is None:
        return None
    last = first if last is None or last < first else last
    printed = first in labels and last in labels
    spans = last != first
    return Pages(
        index=first - 1,
        label=labels.get(first, str(first)),
        last_index=last - 1 if spans else None,
        last_label=labels.get(last, str(last)) if spans else None,
        printed=printed,
    )
