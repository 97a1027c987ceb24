"""Citation tokens and the masking that keeps code, images and link definitions out of reach.

A citation token is a bracket of chunk indices: `[1]`, `[1, 2]`, `[1;2]`, `[E1]`,
`[Chunk 1]`, or fullwidth `【1】`. Anything inside fenced code, inline code, a markdown
image or a link reference definition is never a token. Masking here is position-preserving:
masked text has exactly the length of the original, so every position found in it is a
position in the original, and edits spliced into the original leave masked bytes untouched.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

# One index, optionally prefixed the way models sometimes copy the evidence labels.
_INDEX = r"(?:(?i:E|Chunk)\s?)?\d{1,2}"
_INDEX_LIST = rf"{_INDEX}(?:\s*[,;]\s*{_INDEX})*"

# `(?!\()`: `[1](https://...)` is a markdown link, not a citation.
_ASCII_TOKEN = rf"\[({_INDEX_LIST})\](?!\()"
_FULLWIDTH_TOKEN = rf"【({_INDEX_LIST})】"
TOKEN_RE = re.compile(rf"{_ASCII_TOKEN}|{_FULLWIDTH_TOKEN}")
"""A citation token; group 1 (ASCII) or group 2 (fullwidth) holds the index list."""
# Searched separately: a pattern opening with one literal is scanned at C speed.
_ASCII_TOKEN_RE = re.compile(_ASCII_TOKEN)
_FULLWIDTH_TOKEN_RE = re.compile(_FULLWIDTH_TOKEN)

_NUMBER_RE = re.compile(r"\d+")

# Private-use character: never whitespace, punctuation, a digit or a bracket, so masked
# regions cannot take part in tokens, sentence ends or structural boundaries.
FILLER = "\ue000"

# Fenced code: an opening fence line, then up to a closing fence of the same kind, or to
# the end of the text when unterminated (as CommonMark does). A backtick fence's info string
# has no backticks (else the line is inline code).
_FENCE_RE = re.compile(
    r"[ \t]{0,3}(?:(?P<bt>`{3,})[^`\n]*$|(?P<tl>~{3,})[^\n]*)"
    r"(?:\n.*?^[ \t]{0,3}(?(bt)(?P=bt)`*|(?P=tl)~*)[ \t]*$|.*\Z)",
    re.MULTILINE | re.DOTALL,
)
# Inline code: a backtick run, content without a blank line, the same run closing it.
_CODE_RE = re.compile(r"(?<!`)(`+)(?!`)(?:(?!\n[ \t]*\n).)+?(?<!`)\1(?!`)", re.DOTALL)
# Images, inline or by reference; the alt text may hold one level of brackets.
_IMAGE_RE = re.compile(r"!\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\](?:\([^)\n]*\)|\[[^\]\n]*\])")
# Link reference definitions: `[1]: https://example.org "title"`.
_REFDEF_RE = re.compile(
    r"^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*(?:<[^>\n]*>|\S+)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$",
    re.MULTILINE,
)
# Where a masked region can begin; one character class, so the scan runs at C speed.
_CANDIDATE_RE = re.compile(r"[`~!]")

Region = tuple[int, int, str]  # start, end, kind: "fence" | "code" | "image" | "refdef"


def masked_regions(text: str) -> list[Region]:
    """Fenced code, inline code, images and link reference definitions, left to right.

    Scans only the few places where a region can begin (backticks, tildes, `!`, lines
    holding `]:`) and lets the leftmost region win, as one combined pattern would.
    """
    events = [(m.start(), False) for m in _CANDIDATE_RE.finditer(text)]
    definition_lines = []
    colon = text.find("]:")
    while colon >= 0:
        definition_lines.append((text.rfind("\n", 0, colon) + 1, True))
        colon = text.find("]:", colon + 2)
    if definition_lines:
        events = sorted(events + definition_lines)
    regions: list[Region] = []
    cursor = 0
    for position, line_start in events:
        if position < cursor:
            continue
        if line_start:
            m, kind, start = _REFDEF_RE.match(text, position), "refdef", position
        elif text[position] == "!":
            m, kind, start = _IMAGE_RE.match(text, position), "image", position
        else:
            m, kind, start = None, "fence", text.rfind("\n", 0, position) + 1
            if start >= cursor and position - start <= 3 and not text[start:position].strip(" \t"):
                m = _FENCE_RE.match(text, start)
            if m is None and text[position] == "`":
                m, kind, start = _CODE_RE.match(text, position), "code", position
        if m is not None:
            regions.append((start, m.end(), kind))
            cursor = m.end()
    return regions


class Token(NamedTuple):
    """One citation token found outside masked regions.

    `indices` are the distinct in-range indices in written order; a token without any is
    not a citation (it is removed from resolved text, and claims ignore it).
    """

    start: int
    end: int
    indices: tuple[int, ...]

    @property
    def valid(self) -> bool:
        return bool(self.indices)


@dataclass(frozen=True, slots=True)
class Masked:
    """The original text and two same-length views of it.

    `masked`: every masked region replaced by filler (fenced code keeps a newline at each
    end so it reads as a block of its own). `readable`: like `masked`, except inline code
    keeps its content and only its backticks become filler; used to build claim text.
    """

    text: str
    masked: str
    readable: str


def mask(text: str) -> Masked:
    """Mask fenced code, inline code, images and link reference definitions."""
    regions = masked_regions(text)
    if not regions:
        return Masked(text, text, text)
    masked: list[str] = []
    readable: list[str] = []
    cursor = 0
    for start, end, kind in regions:
        masked.append(text[cursor:start])
        readable.append(text[cursor:start])
        length = end - start
        if kind == "fence":
            cover = "\n" + FILLER * (length - 2) + "\n" if length >= 2 else FILLER * length
            masked.append(cover)
            readable.append(cover)
        elif kind == "code":
            masked.append(FILLER * length)
            run = len(text[start:end]) - len(text[start:end].lstrip("`"))
            readable.append(FILLER * run + text[start + run : end - run] + FILLER * run)
        else:
            masked.append(FILLER * length)
            readable.append(FILLER * length)
        cursor = end
    masked.append(text[cursor:])
    readable.append(text[cursor:])
    return Masked(text, "".join(masked), "".join(readable))


def parse_indices(index_list: str, n_chunks: int) -> tuple[int, ...]:
    """The distinct in-range indices of a token's index list, in written order."""
    if index_list.isdecimal():  # the common `[n]`
        n = int(index_list)
        return (n,) if 1 <= n <= n_chunks else ()
    seen: list[int] = []
    for n in map(int, _NUMBER_RE.findall(index_list)):
        if 1 <= n <= n_chunks and n not in seen:
            seen.append(n)
    return tuple(seen)


def find_tokens(masked: str, n_chunks: int) -> list[Token]:
    """Every citation token in masked text, in document order, valid or not."""
    matches = list(_ASCII_TOKEN_RE.finditer(masked))
    if "【" in masked:
        matches += _FULLWIDTH_TOKEN_RE.finditer(masked)
        matches.sort(key=lambda m: m.start())
    return [Token(m.start(), m.end(), parse_indices(m.group(1), n_chunks)) for m in matches]


def format_token(indices: tuple[int, ...] | list[int]) -> str:
    """The canonical form of a surviving token: `[1]` or `[1, 2]`."""
    return "[" + ", ".join(str(i) for i in indices) + "]"


_CLOSERS = frozenset(".,;:!?)")


def splice_tokens(text: str, tokens: list[Token], replace: Callable[[Token], str | None]) -> str:
    """Rewrite tokens in the original text; positions come from its masked view.

    `replace(token)` returns the new text for a token, or `None` to remove it. A removed
    token takes the horizontal whitespace before it when punctuation, a line end or other
    whitespace follows (`claim [99].` -> `claim.`), and the whitespace after it when it
    opened a line; everything else, masked regions included, is copied byte for byte.
    """
    return splice_tokens_mapped(text, tokens, replace)[0]


def splice_tokens_mapped(
    text: str, tokens: list[Token], replace: Callable[[Token], str | None]
) -> tuple[str, Callable[[int], int]]:
    """`splice_tokens`, and where each position of `text` lands in the result: a copied
    character where it was copied to, a position in a removed or rewritten stretch where
    that stretch began (so a removed token's start is where the token stood)."""
    out: list[str] = []
    copied: list[tuple[int, int, int]] = []  # (start in text, end in text, start in out)
    length = 0

    def copy(start: int, end: int) -> None:
        nonlocal length
        copied.append((start, end, length))
        out.append(text[start:end])
        length += end - start

    cursor = 0
    for token in tokens:
        new = replace(token)
        end = token.start
        if new is None:
            following = text[token.end : token.end + 1]
            if not following or following.isspace() or following in _CLOSERS:
                end = len(text[cursor:end].rstrip(" \t")) + cursor
            copy(cursor, end)
            cursor = token.end
            at_line_start = token.start == 0 or text[token.start - 1] == "\n"
            if at_line_start:
                while cursor < len(text) and text[cursor] in " \t":
                    cursor += 1
        else:
            copy(cursor, end)
            out.append(new)
            length += len(new)
            cursor = token.end
    copy(cursor, len(text))
    starts = [start for start, _, _ in copied]

    def position(at: int) -> int:
        start, end, to = copied[max(0, bisect_right(starts, at) - 1)]
        return to + min(max(at, start), end) - start

    return "".join(out), position
