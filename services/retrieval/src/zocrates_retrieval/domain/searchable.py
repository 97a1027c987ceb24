"""The text the search models read, folded to compatibility characters.

A PDF typeset with LaTeX gives its variables and labels as mathematical letters: "𝑃𝐷𝐹
baseline", "𝑝-values", "𝜎 = 1.51". To BM25 "𝑃𝐷𝐹" is another word than "PDF", and MiniLM's
tokenizer reads it as unknown, so such a passage is not found by the words it shows. Each
character is read as its Unicode compatibility form (NFKC) where that form is one character:
mathematical letters, full-width forms, super- and subscript digits. One for one, so that
offsets into the text (the answer units' spans) stay where they were; what the user is shown
and quoted is never folded.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def searchable(text: str) -> str:
    """`text` with each character that has a one-character compatibility form folded to it."""
    return _NON_ASCII.sub(_folded, text) if not text.isascii() else text


def _folded(match: re.Match) -> str:
    return _fold(match.group())


@functools.lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 else char
