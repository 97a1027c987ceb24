"""Section-aware chunks of bounded token length.

Consecutive paragraphs of one section are packed into a chunk until the next would pass the
budget; a chunk never spans two sections, so its section path is exact. A paragraph longer
than the budget is cut at sentence ends (at word boundaries when a sentence alone is too
long). No overlap between chunks: each passage is cited on its own, and overlapping text
would show up twice in the evidence.

A table is a chunk of its own, never packed with paragraphs; one longer than the budget is
cut between rows, each part repeating the caption and header row so it still reads as a
table. A Zotero annotation is a chunk of its own too, so that it is cited on its own page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # convert uses the heading tests below: no import of it at run time
    from zocrates_retrieval.convert import Block

TokenCounter = Callable[[str], int]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


_REFERENCE_HEADINGS = re.compile(
    r"^(?:[0-9ivxIVX]+\.?\s+)?(references?|bibliography|literature cited|works cited|cited literature)$", re.IGNORECASE)


def is_reference_list(section: tuple[str, ...]) -> bool:
    """A bibliography: its entries describe other papers, so they are no evidence of this one."""
    return any(_REFERENCE_HEADINGS.match(title.strip()) for title in section)


#: Headings of the matter after a paper's conclusions: thanks, declarations, who wrote what.
_BACK_MATTER_TERM = (
    r"(?:acknowledge?ments?|funding(?: sources?| information| statement)?|sources? of funding"
    r"|role of the funding source|financial (?:support|disclosures?)|grant support"
    r"|competing (?:financial )?interests?|conflicts? of interests?|(?:declaration|statement) of (?:competing )?interests?"
    r"|declarations?|disclosures?"
    r"|authors?'?s? (?:details|information|contributions?|affiliations?)|affiliations?"
    r"|ethics(?: approval| statement| declarations?)?|ethical approval|consent (?:for publication|to participate)"
    r"|(?:data )?availability(?: of (?:data|supporting data)(?: and materials?)?)?(?: statement)?|data sharing(?: statement)?"
    r"|abbreviations|publisher'?s note|additional files?(?: \d+)?|supplementary (?:materials?|information))")
_BACK_MATTER_HEADING = re.compile(
    rf"^(?:[0-9ivx]+(?:\.[0-9]+)*\.?\s+)?{_BACK_MATTER_TERM}(?:\s*(?:,|;|&|/|\band\b)\s*{_BACK_MATTER_TERM})*$",
    re.IGNORECASE)


def is_back_matter(section: tuple[str, ...]) -> bool:
    """Acknowledgements, declarations, author details and the like: indexed (someone may ask
    who funded a study) but rarely what a question is about, so search ranks them last.

    The whole heading must be such matter ("Ethics approval and consent to participate"), so
    a section about it inside the paper ("Methods > Funding of the trial", "Ethical
    considerations") is content. Reference lists are `is_reference_list`'s."""
    return any(_BACK_MATTER_HEADING.match(title.strip().replace("\u2019", "'").rstrip(".:"))
               for title in section)


def approx_tokens(text: str) -> int:
    """A tokenizer-free estimate (word pieces run about 1.3 per English word)."""
    return int(len(text.split()) * 1.3) + 1


@dataclass(frozen=True)
class Chunk:
    text: str
    section: tuple[str, ...]
    page: int | None
    page_end: int | None
    kind: str = "text"

    @property
    def section_label(self) -> str | None:
        return " > ".join(self.section) or None


def _split_long(text: str, max_tokens: int, count: TokenCounter) -> list[str]:
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if count(sentence) <= max_tokens:
            pieces.append(sentence)
            continue
        words, current = sentence.split(), []
        for word in words:  # a sentence longer than the budget: cut between words
            if current and count(" ".join(current + [word])) > max_tokens:
                pieces.append(" ".join(current))
                current = []
            current.append(word)
        if current:
            pieces.append(" ".join(current))
    return pieces


#: Blocks that become chunks of their own, never packed with their neighbours.
UNIT_KINDS = ("table", "annotation")


def _unit_parts(block: Block, max_tokens: int, count: TokenCounter) -> list[str]:
    """A unit's text in parts of at most `max_tokens`, cut between lines (a table's rows);
    each part starts with the block's head (a table's caption and header row). A single line
    longer than a part can hold is cut between sentences or words like a paragraph."""
    if count(block.text) <= max_tokens:
        return [block.text]
    lines = block.text.split("\n")
    head, rows = "\n".join(lines[:block.head_lines]), lines[block.head_lines:]
    if not rows or count(head) > max_tokens // 2:  # a head too long to repeat: rows alone
        head, rows = "", lines
    room = max_tokens - (count(head) if head else 0)
    parts: list[str] = []
    current: list[str] = []
    for row in rows:
        pieces = [row] if count(row) <= room else _split_long(row, room, count)
        for piece in pieces:
            if current and count("\n".join(current + [piece])) > room:
                parts.append("\n".join(current))
                current = []
            current.append(piece)
    if current:
        parts.append("\n".join(current))
    return [f"{head}\n{part}" if head else part for part in parts]


def chunk_blocks(blocks: list[Block], max_tokens: int, count: TokenCounter = approx_tokens) -> list[Chunk]:
    """Pack `blocks` into chunks of at most `max_tokens` (by `count`), never across sections.

    Reference lists are left out (see `is_reference_list`)."""
    chunks: list[Chunk] = []
    parts: list[str] = []
    used = 0
    section: tuple[str, ...] = ()
    page = page_end = None
    kind = "text"

    def flush() -> None:
        nonlocal parts, used
        if parts:
            text = parts[0]
            for part in parts[1:]:  # a new line only where the previous paragraph really ended
                text += ("\n" if text.endswith((".", "!", "?", ":")) else " ") + part
            chunks.append(Chunk(text, section, page, page_end, kind))
        parts, used = [], 0

    for block in blocks:
        if is_reference_list(block.section):
            continue
        if block.kind in UNIT_KINDS:
            flush()
            chunks += [Chunk(part, block.section, block.page, block.page, block.kind)
                       for part in _unit_parts(block, max_tokens, count)]
            continue
        if block.section != section or block.kind != kind:
            flush()
            section, kind = block.section, block.kind
        pieces = [block.text] if count(block.text) <= max_tokens else _split_long(block.text, max_tokens, count)
        for i, piece in enumerate(pieces):
            n = count(piece)
            if parts and used + n > max_tokens:
                flush()
            if not parts:
                page = block.page
                parts.append(piece)
            elif i > 0:  # the same paragraph goes on
                parts[-1] += " " + piece
            else:
                parts.append(piece)
            used += n
            page_end = block.page
    flush()
    return chunks
