"""Where sentences end, with a guard for academic abbreviations and initials."""

from __future__ import annotations

import re

_TERMINATOR_RE = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|\Z)")

# Words whose trailing period does not end a sentence (compared lowercased, without the dot).
_ABBREVIATIONS = frozenset(
    "al e.g i.e etc vs cf fig figs eq eqs no sec approx ca dr prof mr mrs ms jr sr ref refs "
    "vol pp ch".split()
)
_OPENERS = "([{\"'“‘"


def is_abbreviation(text: str, dot: int) -> bool:
    """Whether the single `.` at `dot` closes an abbreviation or an initial (`J. Smith`)."""
    if text[dot] != ".":
        return False
    start = dot
    while start > 0 and dot - start < 12 and not text[start - 1].isspace():
        start -= 1
    word = text[start:dot].lstrip(_OPENERS)
    if len(word) == 1:
        return word.isupper()
    return word.lower() in _ABBREVIATIONS


def sentence_ends(text: str, start: int = 0, end: int | None = None) -> list[int]:
    """Positions just after each sentence terminator in `text[start:end]`, in order."""
    stop = len(text) if end is None else end
    return [
        m.end()
        for m in _TERMINATOR_RE.finditer(text, start, stop)
        if not (m.end() - m.start() == 1 and is_abbreviation(text, m.start()))
    ]
