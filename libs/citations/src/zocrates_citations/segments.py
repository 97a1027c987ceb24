"""Source passages cut into numbered spans for sentence-level attribution.

Prose is split into sentences (with the same abbreviation and initials guard as claim
extraction); a markdown heading, each table row, a display-math block and a fenced code
block stay whole. Every span is an exact slice of the passage, so the UI can highlight it
in place.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from zocrates_citations.parsing import FILLER, mask
from zocrates_citations.sentences import sentence_ends
from zocrates_contracts.turns import SpanKind

_FENCE_RE = re.compile(r"[ \t]{0,3}(`{3,}|~{3,})")
_HEADING_RE = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]|$)")
_TABLE_SEPARATOR_RE = re.compile(r"\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?")
_LIST_MARKER_RE = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+")
_INLINE_MATH_RE = re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?(?<![\\$])\$(?!\$)")
_MATH_FENCES = (("$$", "$$"), ("\\[", "\\]"))


class Span(NamedTuple):
    """One numbered span of a source passage: `text == passage[start:end]`."""

    index: int
    start: int
    end: int
    text: str
    kind: SpanKind


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _lines(text: str) -> list[tuple[int, int]]:
    """`(start, end)` of every line, without its newline."""
    lines, start = [], 0
    while start <= len(text):
        end = text.find("\n", start)
        if end < 0:
            lines.append((start, len(text)))
            break
        lines.append((start, end))
        start = end + 1
    return lines


def _sentence_view(text: str) -> str:
    """`text` with code, images and inline math masked, so their periods end nothing."""
    masked = mask(text).masked
    if "$" in masked:
        masked = _INLINE_MATH_RE.sub(lambda m: FILLER * len(m.group()), masked)
    return masked


def segment_source_text(text: str) -> list[Span]:
    """The passage as numbered spans (1..N) in reading order; blank text gives none."""
    view = _sentence_view(text)
    lines = _lines(text)
    found: list[tuple[int, int, SpanKind]] = []
    paragraph: list[int] = []  # [start, end] of the prose block being collected

    def flush() -> None:
        if paragraph:
            found.extend(_sentences(text, view, paragraph[0], paragraph[1]))
            paragraph.clear()

    def block_end(first: int, closer: str, skip: int) -> int:
        """Index of the line that closes a block opened on line `first`."""
        for j in range(first, len(lines)):
            s, e = lines[j]
            line = text[s:e]
            if closer in (line[skip:] if j == first else line):
                return j
        return len(lines) - 1

    i = 0
    while i < len(lines):
        s, e = lines[i]
        line = text[s:e]
        stripped = line.strip()
        if not stripped:
            flush()
        elif fence := _FENCE_RE.match(line):
            flush()
            j = block_end(i + 1, fence.group(1), 0) if i + 1 < len(lines) else i
            found.append((s, lines[j][1], "code"))
            i = j
        elif opener := next((pair for pair in _MATH_FENCES if stripped.startswith(pair[0])), None):
            flush()
            skip = line.index(opener[0]) + len(opener[0])
            j = block_end(i, opener[1], skip)
            found.append((s + _indent(line), lines[j][1], "math"))
            i = j
        elif _HEADING_RE.match(line):
            flush()
            found.append((s + _indent(line), s + len(line.rstrip()), "heading"))
        elif stripped.startswith("|"):
            flush()
            if not _TABLE_SEPARATOR_RE.fullmatch(stripped):
                found.append((s + _indent(line), s + len(line.rstrip()), "table_row"))
        else:
            marker = _LIST_MARKER_RE.match(line)
            if marker:
                flush()
            if not paragraph:
                paragraph.extend([s + (marker.end() if marker else _indent(line)), e])
            paragraph[1] = e
        i += 1
    flush()
    return [Span(index, start, end, text[start:end], kind) for index, (start, end, kind) in enumerate(found, start=1)]


def _sentences(text: str, view: str, start: int, end: int) -> list[tuple[int, int, SpanKind]]:
    result: list[tuple[int, int, SpanKind]] = []
    cursor = start
    for stop in sentence_ends(view, start, end):
        result.append((cursor, stop, "sentence"))
        cursor = stop
    result.append((cursor, end, "sentence"))
    trimmed = []
    for s, e, kind in result:
        piece = text[s:e]
        left = len(piece) - len(piece.lstrip())
        right = len(piece.rstrip())
        if right > left:
            trimmed.append((s + left, s + right, kind))
    return trimmed
