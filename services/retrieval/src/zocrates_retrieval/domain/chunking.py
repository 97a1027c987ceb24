"""Section-aware chunks of bounded token length.

Consecutive paragraphs of one section are packed into a chunk until the next would pass the
budget; a chunk never spans two sections, so its section path is exact. A paragraph longer
than the budget is cut at sentence ends (at word boundaries when a sentence alone is too
long). No overlap between chunks: each passage is cited on its own, and overlapping text
would show up twice in the evidence.

A table is a chunk of its own, never packed with paragraphs; one longer than the budget is
cut between rows, each part repeating the caption (its first sentence when long) and the
column headers in force, so it still reads as a table. A Zotero annotation is a chunk of its
own too, so that it is cited on its own page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from zocrates_citations.sentences import sentence_ends
from zocrates_retrieval.domain.document import Block
from zocrates_retrieval.domain.structure import (
    Unit,
    first_sentence,
    has_bullet,
    header_rows,
    is_caption,
    is_page_note,
    is_reference_list,
    item_units,
    prose_units,
    section_role,
    table_label,
    table_units,
)

TokenCounter = Callable[[str], int]


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
    role: str = "body"  # structure.section_role
    units: tuple[Unit, ...] = ()  # its answer units, in reading order (structure)

    @property
    def section_label(self) -> str | None:
        return " > ".join(self.section) or None


def _split_long(text: str, max_tokens: int, count: TokenCounter) -> list[str]:
    pieces: list[str] = []
    for sentence in _sentences(text):
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


def _sentences(text: str) -> list[str]:
    """`text` cut where its sentences end, as the answer units are (`sentence_ends`: not after
    "et al. [34] and ...", an initial or a stop that lower-case text goes on after)."""
    bounds = [0, *sentence_ends(text), len(text)]
    return [piece for a, b in zip(bounds, bounds[1:]) if (piece := text[a:b].strip())]


#: Blocks that become chunks of their own, never packed with their neighbours.
UNIT_KINDS = ("table", "annotation")


def _unit_parts(block: Block, max_tokens: int, count: TokenCounter) -> list[tuple[str, int]]:
    """A unit's text in parts of at most `max_tokens`, cut between lines (a table's rows),
    each with the number of head lines it starts with (a table's caption and header row).

    Every part of a table starts with a head, so its rows still read as rows of their table:
    the first part with the table's own, the later ones with its caption and the column
    headers in force where they start (a header row mid-table replaces the first). A caption
    too long to repeat is cut to its first sentence, or to its label ("Table 2."); only a head
    too long even so leaves the rows alone. A single line longer than a part can hold is cut
    between sentences or words like a paragraph."""
    if count(block.text) <= max_tokens:
        return [(block.text, block.head_lines)]
    lines = block.text.split("\n")
    head, rows = lines[: block.head_lines], lines[block.head_lines :]
    if not rows:
        head, rows = [], lines
    caption = _short_caption(head[0], head[1:], max_tokens, count) if len(head) == 2 else None
    headers = {len(head) + no for no in header_rows([row.split(" | ") for row in rows])} if head else set()
    column_head = head[-1:]

    def later_head() -> list[str]:
        """What a later part starts with: the short caption and the column headers in force."""
        if len(head) == 2:
            return [caption, *column_head] if caption is not None else []
        return column_head if head and count(column_head[0]) <= max_tokens // 2 else []

    room = max_tokens - count("\n".join(later_head())) if later_head() else max_tokens
    parts: list[tuple[list[str], list[str]]] = []  # (head, rows) of each part
    part_head = head if head and count("\n".join(head)) <= max_tokens else later_head()
    current: list[str] = []
    for no, row in enumerate(rows, start=len(head)):
        for piece in [row] if count(row) <= room else _split_long(row, room, count):
            if (current or part_head) and count("\n".join(part_head + current + [piece])) > max_tokens:
                parts.append((part_head, current))
                current, part_head = [], later_head()
            current.append(piece)
        if no in headers:
            column_head = [row]
    parts.append((part_head, current))
    return [("\n".join(h + r), len(h)) for h, r in parts]


def _short_caption(caption: str, header: list[str], max_tokens: int, count: TokenCounter) -> str | None:
    """The caption a table's later parts repeat: whole if it leaves half a part for rows, else
    its first sentence, else its label; None when even the label leaves too little room."""
    first = first_sentence(caption)
    label = table_label(caption).split(" (", 1)[0]
    for candidate in (caption, first if first == caption else f"{first}.", f"{label}."):
        if count("\n".join([candidate, *header])) <= max_tokens // 2:
            return candidate
    return None


def _paragraphs(blocks: list[Block]) -> list[Block]:
    """Blocks with the lines of one paragraph joined: a PDF's text blocks are often single
    lines, and a chunk cut between two of them would cut a sentence in half. A block that
    does not end a sentence runs on into the next one of its section and page, unless either
    is a caption; and into the first of the next page where that goes on in lower case ("...
    to yield a final" | "substrate concentration of 4 or 8 μM."): a sentence cut by the page
    break. The paragraph keeps the page it starts on, as a citation of it does.

    A page's notes (an author note, correspondence, abbreviations) often sit between a
    sentence and the rest of it: they are paragraphs of their own, and the sentence goes on
    past them where the text after them on the same page goes on in lower case ("... from" |
    "1These authors contributed equally to this work." | "their C-domain counterparts were
    selected."); the notes then come before the paragraph. So does a table or a figure's caption
    set inside a sentence, on its page or at the top of the next, where the text after it goes
    on in lower case ("... While this" | Table 1 | "allows for effective reduction ...")."""
    merged: list[Block] = []
    held: int | None = None  # the paragraph a page's notes or a float interrupted, by its index in `merged`
    floated = False  # whether a table or caption interrupted it (else notes only)
    for block in blocks:
        note = block.kind == "text" and is_page_note(block.text)
        float_ = _is_float(block)
        if held is not None and (note or float_):
            merged.append(block)
            floated |= float_
            continue
        at = held if held is not None else len(merged) - 1
        last = merged[at] if merged else None
        runs_on = _runs_on(last, block)
        if held is None and ((runs_on and note) or (float_ and _interrupted_by(last, block))):
            merged.append(block)
            held, floated = at, float_
            continue
        if runs_on and held is None:
            merged[at] = replace(last, text=f"{last.text} {block.text}")
        elif runs_on and _GOES_ON.match(block.text) and (block.page == last.page or floated):
            # the paragraph moves after the notes or the float, so that it may go on further
            merged.append(replace(merged.pop(held), text=f"{last.text} {block.text}"))
        else:
            merged.append(block)
        held, floated = None, False
    return merged


def _is_float(block: Block) -> bool:
    """A table or a caption: set where the page has room for it, often inside a sentence."""
    return block.kind == "table" or (block.kind == "text" and is_caption(block.text))


def _interrupted_by(last: Block | None, float_: Block) -> bool:
    """Whether the paragraph `last` is unfinished where `float_` comes, on its page or the next
    ("... While this" | Table 1 at the top of the next page | "allows for effective reduction
    ..."): its sentence may go on after the float."""
    return (
        last is not None
        and last.kind == "text"
        and last.section == float_.section
        and (float_.page == last.page or _next_page(last, float_))
        and not _SENTENCE_DONE.search(last.text)
        and not is_caption(last.text)
        and _reads_as_prose(last.text)
    )


def _reads_as_prose(text: str) -> bool:
    """Most of its words in lower case, as a sentence's are: not a figure's labels, which PDFs
    give as text before the figure's caption ("Referred cases (36%) Self-Referrals (64%) OPD II
    Referrals SHORT HOME OTHERS ...")."""
    words = [w for w in text.split() if w[:1].isalpha()]
    return 2 * sum(w[0].islower() for w in words) >= len(words)


def _runs_on(last: Block | None, block: Block) -> bool:
    """Whether the paragraph `last` goes on with `block` (see `_paragraphs`)."""
    return (
        last is not None
        and block.kind == last.kind == "text"
        and block.section == last.section
        and (block.page == last.page or (bool(_GOES_ON.match(block.text)) and _next_page(last, block)))
        and not _SENTENCE_DONE.search(last.text)
        and not is_caption(last.text)
        and not is_caption(block.text)
        and not leaves_list(last.text, block.text)
    )


_SENTENCE_DONE = re.compile(r"[.!?:][\"'”’)\]]*\s*$")
_GOES_ON = re.compile(r"^[a-z(\[]")
#: Words a paragraph after a list has at least; a wrapped item's last line is shorter ("Department").
MIN_WORDS_AFTER_LIST = 6


def leaves_list(before: str, text: str) -> bool:
    """Whether `text` is a paragraph of its own after a bulleted list that `before` ends: a
    list's last item has no full stop, so the prose after it would otherwise run on into the
    item ("... utilization of services within the department" | "Interviews were audio
    recorded and later transcribed."). A wrapped item's next line is shorter, or no sentence."""
    return (
        has_bullet(before)
        and text[:1].isupper()
        and len(text.split()) >= MIN_WORDS_AFTER_LIST
        and bool(_SENTENCE_DONE.search(text))
    )


def _next_page(before: Block, block: Block) -> bool:
    return before.page is not None and block.page == before.page + 1


def _front_matter(blocks: list[Block]) -> int:
    """How many leading blocks are front matter: those before the first heading, in a
    document that has headings (its title, author list and the like)."""
    first = next((i for i, b in enumerate(blocks) if b.section), None)
    return 0 if first is None else sum(1 for b in blocks[:first] if not b.section and b.kind == "text")


@dataclass(frozen=True)
class _Part:
    """A piece of a chunk: a paragraph, an item of a list without bullets, or a table part
    with its head line count."""

    text: str
    kind: str = "text"  # or "list_item", "table"
    head_lines: int = 0


def _units(parts: list[_Part], role: str) -> tuple[str, tuple[Unit, ...]]:
    """Join a chunk's parts into its text, and find its units. Paragraph parts joined by a
    space are one paragraph for this: a PDF's text blocks are often single lines, and a
    sentence runs on across them. A caption, a list item and a page's note end their own."""
    text, units = "", []
    paragraph = 0  # where the prose paragraph being collected starts
    after_break = False  # a caption or a list item is a paragraph of its own, whatever its punctuation

    def finish() -> None:
        if len(text) > paragraph:
            units.extend(prose_units(text, paragraph, len(text), role))

    for part in parts:
        caption = part.kind == "text" and is_caption(part.text)
        note = part.kind == "text" and is_page_note(part.text)
        if text:  # a new line only where the previous paragraph really ended
            new_line = (
                text.endswith((".", "!", "?", ":"))
                or part.kind != "text"
                or caption
                or after_break
                or leaves_list(text[paragraph:], part.text)
                or note
            )
            if new_line:
                finish()
            text += "\n" if new_line else " "
            if new_line:
                paragraph = len(text)
        start, end = len(text), len(text) + len(part.text)
        if part.kind == "table":
            units.extend(table_units(text + part.text, start, end, part.head_lines))
        elif part.kind == "list_item":
            units.extend(item_units(text + part.text, start, end, role))
        text += part.text
        if part.kind != "text":
            paragraph = len(text)
        after_break = caption or note or part.kind == "list_item"  # a page's note ends where it does
    finish()
    return text, tuple(units)


def chunk_blocks(blocks: list[Block], max_tokens: int, count: TokenCounter = approx_tokens) -> list[Chunk]:
    """Pack `blocks` into chunks of at most `max_tokens` (by `count`), never across sections,
    each with its role and answer units (see `structure`).

    Reference lists are left out (see `is_reference_list`)."""
    blocks = _paragraphs(blocks)
    chunks: list[Chunk] = []
    parts: list[_Part] = []
    used = 0
    section: tuple[str, ...] = ()
    page = page_end = None
    kind = "text"
    front = False
    front_blocks = _front_matter(blocks)

    def flush() -> None:
        nonlocal parts, used
        if parts:
            role = section_role(section, kind, front)
            text, units = _units(parts, role)
            chunks.append(Chunk(text, section, page, page_end, kind, role, units))
        parts, used = [], 0

    for no, block in enumerate(blocks):
        if is_reference_list(block.section):
            continue
        if block.kind in UNIT_KINDS:
            flush()
            section, kind, front = block.section, block.kind, False
            page = page_end = block.page
            table = block.kind == "table"
            for part, head_lines in _unit_parts(block, max_tokens, count):
                parts = [_Part(part, "table", head_lines) if table else _Part(part)]
                flush()
            continue
        in_front = no < front_blocks
        block_kind = "text" if block.kind == "list_item" else block.kind  # items pack with prose
        if block.section != section or block_kind != kind or in_front != front:
            flush()
            section, kind, front = block.section, block_kind, in_front
        pieces = [block.text] if count(block.text) <= max_tokens else _split_long(block.text, max_tokens, count)
        for i, piece in enumerate(pieces):
            n = count(piece)
            if parts and used + n > max_tokens:
                flush()
            if not parts:
                page = block.page
                parts.append(_Part(piece, block.kind))
            elif i > 0:  # the same paragraph goes on
                parts[-1] = replace(parts[-1], text=f"{parts[-1].text} {piece}")
            else:
                parts.append(_Part(piece, block.kind))
            used += n
            page_end = block.page
    flush()
    return chunks
