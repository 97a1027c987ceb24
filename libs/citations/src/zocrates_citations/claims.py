"""Per-occurrence claim extraction: the assertion each citation token attributes to its chunk.

For a token, the claim runs backward from the token to the nearest of: the previous valid
citation token, a paragraph break, a list item, a table row, or a heading line (the heading
itself never enters the claim). A bracket right beside the one before it (`claim [1][2].`),
which would attribute nothing, cites that bracket's claim. A span over `MAX_CLAIM_CHARS` is clamped to start at a
sentence. When the span is too short to stand alone, or names only an author ("According to
Smith et al. [1], ..."), the claim continues forward to the end of the sentence. The text is
then cleaned for the verifier: markdown stripped (a bold lead-in stays as text), symbols
spelled out, whitespace collapsed, terminal punctuation ensured.

Token positions and sentence ends are computed once per text on its masked view, so
extraction is linear in the text length plus a binary search per token. `parse_answer` does
that work once for an answer; claim extraction and resolution both read the same
`ParsedAnswer`, so the gateway tokenises an answer once per turn.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from zocrates_citations.parsing import FILLER, Masked, Token, find_tokens, mask
from zocrates_citations.sentences import sentence_ends

MAX_CLAIM_CHARS = 800
"""Longest backward span; long enough for a dense paragraph, short enough for a verifier."""

MIN_CLAIM_CHARS = 30
"""A backward span shorter than this is a sentence fragment: scan forward for the rest."""

# Structural boundaries, each anchored on the newline before its line (one literal first
# character lets the regex engine skip ahead at C speed); the text is searched with a newline
# prepended so that the first line counts too. `skip`: the claim starts after the line
# (heading, blank line); `at`: the claim starts at the line (list item, table row; the marker
# is stripped later).
_BLOCK_RE = re.compile(
    r"\n(?:(?P<skip>[ \t]*#{1,6}(?:[ \t][^\n]*)?(?=\n|\Z)|[ \t\r]*(?=\n))"
    r"|(?P<at>(?=[ \t]*(?:[-*+]|\d+[.)])[ \t]|[ \t]*\|)))"
)

_CLOSERS = ".,;:!?)]"

# A span that only names its source, with the predicate still to come: "According to Smith
# et al.", "As reported by van der Berg and Okafor (2019)", "Watson & Crick".
_SURNAME = r"(?:(?:van|von|de|der|den|del|la|le|du|da|di)\s+)*[A-Z][\w'’\-]*"
_AUTHOR_ONLY_RE = re.compile(
    r"^(?:(?i:according to|as (?:[a-z]+ )?(?:by|in)|following|per|see|in|from|like|unlike)\s+)?"
    r"(?:(?i:the )?(?i:work|study|studies|review|analysis|paper|findings|data|results) of\s+)?"
    rf"{_SURNAME}(?:\s+(?:et al\.?|and colleagues|and co-?workers|(?:and|&)\s+{_SURNAME}))?"
    r"(?:,?\s*\(?\d{4}[a-z]?\)?)?\s*[,:]?$"
)

_LINK_RE = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_STAR_EMPHASIS_RE = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_UNDERSCORE_EMPHASIS_RE = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_QUOTE_MARKER_RE = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
_SYMBOLS = str.maketrans({"≈": " about ", "≥": " at least ", "≤": " at most ", "→": " to ", "—": " - ", FILLER: None})
_LEADING_RE = re.compile(r"^(?:[.,;:!?*\-+#>|)\]\s]|\d+[.)](?!\d)\s*)+")
_LEADING_CHARS = frozenset(".,;:!?*-+#>|)]0123456789")
_TRAILING_RE = re.compile(r"[\s,;:(\[|\-–—]+$")
_TRAILING_CHARS = frozenset(",;:([|-–—")
_CLOSING_MARKS = "\"'”’)]"
#: Between two brackets of one citation (`claim [1][2].`, `claim [1], [2].`): they cite one claim.
BETWEEN_BRACKETS_RE = re.compile(r"[ \t,;]*")


class ClaimOccurrence(NamedTuple):
    """One citation occurrence to verify.

    `occurrence` counts from 1 per chunk index in document order; `compound` is true when
    the bracket held more than one valid index (the verifier then asks whether the passage
    supports a substantive part of the claim). `claim` may be empty when a token stands
    with no text around it; such an occurrence cannot be verified and should fail open.
    """

    chunk_index: int
    occurrence: int
    claim: str
    compound: bool


class _Structure:
    """Sorted positions of a masked text: where claims may start, stop, and sentences end."""

    __slots__ = ("starts", "stops", "sentence_ends", "sentence_end_set")

    def __init__(self, masked: str) -> None:
        self.starts: list[int] = []
        self.stops: list[int] = []
        # In "\n" + masked, match position p is position p - 1 of masked, so a match's
        # start is the original start of its line and its end is just past the line.
        for m in _BLOCK_RE.finditer("\n" + masked):
            self.stops.append(m.start())
            self.starts.append(m.end() if m.lastgroup == "skip" else m.start())
        self.sentence_ends = sentence_ends(masked)
        self.sentence_end_set = frozenset(self.sentence_ends)


def clean_claim(raw: str) -> str:
    """Plain claim text from a slice of the readable view (markdown stripped, symbols spelled).

    Each step runs only when its trigger character is present: this is the hot loop of
    resolution, once per citation token.
    """
    text = raw.translate(_SYMBOLS)
    if "[" in text:
        text = _LINK_RE.sub(r"\1", text)
    for marker in ("**", "__", "~~", "`"):
        if marker in text:
            text = text.replace(marker, "")
    if "*" in text:
        text = _STAR_EMPHASIS_RE.sub(r"\1", text)
    if "_" in text:
        text = _UNDERSCORE_EMPHASIS_RE.sub(r"\1", text)
    if ">" in text:
        text = _QUOTE_MARKER_RE.sub("", text)
    text = " ".join(text.split())
    if text and text[0] in _LEADING_CHARS:
        text = _LEADING_RE.sub("", text)
    if text and text[-1] in _TRAILING_CHARS:
        text = _TRAILING_RE.sub("", text)
    return text


def _finish(claim: str) -> str:
    """The claim with terminal punctuation (after any closing quote or bracket)."""
    if claim and claim.rstrip(_CLOSING_MARKS)[-1:] not in (".", "!", "?"):
        return claim + "."
    return claim


class ClaimSpan(NamedTuple):
    """A token's claim and where it stands in the answer: `start` is where the backward scan
    began, `end` the token's end, or where the forward scan stopped when it ran."""

    claim: str
    start: int
    end: int


def token_claims(view: Masked, tokens: list[Token]) -> list[str | None]:
    """The claim of each token (parallel to `tokens`; `None` for tokens with no valid index)."""
    return [None if span is None else span.claim for span in token_claim_spans(view, tokens)]


def token_claim_spans(view: Masked, tokens: list[Token]) -> list[ClaimSpan | None]:
    """Each token's claim with its span (parallel to `tokens`; `None` for tokens with no valid index)."""
    masked, readable = view.masked, view.readable
    structure = _Structure(masked)
    valid_starts = [t.start for t in tokens if t.valid]
    spans: list[ClaimSpan | None] = []
    previous_end = 0
    previous: ClaimSpan | None = None
    for token in tokens:
        if not token.valid:
            spans.append(None)
            continue
        span = _claim(masked, readable, structure, valid_starts, previous_end, token)
        if not span.claim and previous is not None and BETWEEN_BRACKETS_RE.fullmatch(masked, previous_end, token.start):
            # A bracket beside the one before (`claim [1][2].`) cites the same claim.
            span = ClaimSpan(previous.claim, previous.start, max(previous.end, token.end))
        spans.append(span)
        previous_end, previous = token.end, span
    return spans


def _claim(
    masked: str,
    readable: str,
    structure: _Structure,
    valid_starts: list[int],
    previous_end: int,
    token: Token,
) -> ClaimSpan:
    s, e = token.start, token.end
    begin = previous_end
    k = bisect_right(structure.starts, s) - 1
    if k >= 0 and structure.starts[k] > begin:
        begin = structure.starts[k]
    if s - begin > MAX_CLAIM_CHARS:
        window = s - MAX_CLAIM_CHARS
        ends = structure.sentence_ends
        j = bisect_left(ends, window)
        if j < len(ends) and ends[j] < s:
            begin = ends[j]
        else:  # no sentence starts in the window: at least start at a word
            space = masked.find(" ", window, s)
            begin = space + 1 if space >= 0 else window
    backward = clean_claim(readable[begin:s])

    stripped_end = len(masked[begin:s].rstrip()) + begin
    ends_sentence = stripped_end in structure.sentence_end_set
    if ends_sentence or (len(backward) >= MIN_CLAIM_CHARS and not _AUTHOR_ONLY_RE.match(backward)):
        return ClaimSpan(_finish(backward), begin, e)

    # Forward scan: the rest of the sentence, up to the next citation or block.
    limit = min(len(masked), e + MAX_CLAIM_CHARS)
    ends = structure.sentence_ends
    j = bisect_right(ends, e)
    if j < len(ends):
        limit = min(limit, ends[j])
    j = bisect_right(valid_starts, s)
    if j < len(valid_starts):
        limit = min(limit, valid_starts[j])
    j = bisect_left(structure.stops, e)
    if j < len(structure.stops):
        limit = min(limit, structure.stops[j])
    forward = readable[e:limit].strip()
    if not forward:
        return ClaimSpan(_finish(backward), begin, e)
    glue = "" if forward[0] in _CLOSERS else " "
    return ClaimSpan(_finish(clean_claim(readable[begin:s].rstrip() + glue + forward)), begin, limit)


def occurrences(tokens: list[Token], claims: list[str | None]) -> list[ClaimOccurrence]:
    """One `ClaimOccurrence` per (valid token, index), numbered per index in document order."""
    counts: dict[int, int] = {}
    result = []
    for token, claim in zip(tokens, claims):
        if claim is None:
            continue
        compound = len(token.indices) > 1
        for index in token.indices:
            counts[index] = counts.get(index, 0) + 1
            result.append(ClaimOccurrence(index, counts[index], claim, compound))
    return result


class Bracket(NamedTuple):
    """A bracket citing two passages or more, for its joint check: one token with several
    indices (`[1, 3]`), or brackets side by side (`[1][3]`, `[1], [3]`) that cite one claim.

    `claim` is the longest of its tokens' claims (they cite one claim, but a bracket beside
    another may read only a fragment of it: "According to Smith [1][2], rates rose."); `indices` its distinct chunk indices in bracket order; `members`
    every `(chunk_index, occurrence)` of it, numbered as `occurrences` numbers them, the first
    being the bracket's first occurrence."""

    claim: str
    indices: tuple[int, ...]
    members: tuple[tuple[int, int], ...]


def side_by_side(masked: str, tokens: list[Token], claims: list[str | None]) -> list[list[int]]:
    """The tokens that claim something, by position, in runs of brackets side by side
    (`[1][3]`, `[1], [3]`): the brackets of a run cite one claim."""
    runs: list[list[int]] = []
    previous: Token | None = None
    for i, (token, claim) in enumerate(zip(tokens, claims)):
        if claim is None:
            continue
        if previous is not None and BETWEEN_BRACKETS_RE.fullmatch(masked, previous.end, token.start):
            runs[-1].append(i)
        else:
            runs.append([i])
        previous = token
    return runs


def brackets(tokens: list[Token], claims: list[str | None], runs: list[list[int]]) -> list[Bracket]:
    """Every bracket of the answer that cites two distinct passages or more, in answer order
    (`runs`: `side_by_side`'s, a bracket each)."""
    counts: dict[int, int] = {}
    found = []
    for run in runs:
        members = []
        for i in run:
            for index in tokens[i].indices:
                counts[index] = counts.get(index, 0) + 1
                members.append((index, counts[index]))
        indices = tuple(dict.fromkeys(index for index, _ in members))
        if len(indices) > 1:
            found.append(Bracket(max((claims[i] for i in run), key=len), indices, tuple(members)))
    return found


@dataclass(frozen=True)
class ParsedAnswer:
    """An answer tokenised once against `n_chunks` chunks: its masked views, its citation
    tokens, and (computed on first use, then kept) each token's claim and the occurrences to
    verify. Pass it to `resolve_citations_and_references` instead of the text to reuse the work.
    """

    view: Masked
    n_chunks: int
    tokens: tuple[Token, ...]

    @property
    def text(self) -> str:
        return self.view.text

    @cached_property
    def claim_spans(self) -> tuple[ClaimSpan | None, ...]:
        """Each token's claim and its span (parallel to `tokens`; `None` for tokens with no valid index)."""
        if not any(token.valid for token in self.tokens):
            return (None,) * len(self.tokens)  # nothing to claim: skip the sentence scan
        return tuple(token_claim_spans(self.view, list(self.tokens)))

    @cached_property
    def claims(self) -> tuple[str | None, ...]:
        """The claim of each token (parallel to `tokens`; `None` for tokens with no valid index)."""
        return tuple(None if span is None else span.claim for span in self.claim_spans)

    @cached_property
    def occurrences(self) -> tuple[ClaimOccurrence, ...]:
        """What `extract_claim_occurrences` returns for this answer."""
        return tuple(occurrences(list(self.tokens), list(self.claims)))

    @cached_property
    def runs(self) -> tuple[tuple[int, ...], ...]:
        """The claiming tokens, by position, in runs of brackets side by side (`side_by_side`)."""
        return tuple(map(tuple, side_by_side(self.view.masked, list(self.tokens), list(self.claims))))

    @cached_property
    def brackets(self) -> tuple[Bracket, ...]:
        """The brackets citing two passages or more (`brackets`), for their joint checks."""
        return tuple(brackets(list(self.tokens), list(self.claims), [list(r) for r in self.runs]))


def parse_answer(text: str, n_chunks: int) -> ParsedAnswer:
    """Mask `text` and find its citation tokens; only indices 1..`n_chunks` are valid."""
    if n_chunks < 0:
        raise ValueError(f"n_chunks must be at least 0, got {n_chunks!r}")
    view = mask(text)
    return ParsedAnswer(view, n_chunks, tuple(find_tokens(view.masked, n_chunks)))


def extract_claim_occurrences(text: str, n_chunks: int) -> list[ClaimOccurrence]:
    """Every citation occurrence in `text` with the claim it attributes, in document order.

    Only indices 1..`n_chunks` count; an out-of-range token is neither a claim nor a claim
    boundary. Tokens inside code, images and link reference definitions are ignored. To
    resolve the same answer afterwards, call `parse_answer` once and use its `occurrences`.
    """
    return list(parse_answer(text, n_chunks).occurrences)
