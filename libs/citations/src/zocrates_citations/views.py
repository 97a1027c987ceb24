"""Clean views of a resolved answer: no HTML, no item keys, no numeric tokens.

`build_coordinator_view` is what the coordinator agent keeps in its memory;
`to_author_year` and `strip_citations` are the two ways the UI copies an answer (citations
visible or hidden). Code blocks always come back byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import unescape

from zocrates_citations.authors import author_year
from zocrates_citations.parsing import Token, find_tokens, mask, splice_tokens
from zocrates_citations.resolve import (
    CITED_HEADING,
    CONSIDERED_HEADING,
    Resolution,
    emphasised,
    entry_parts,
    source_ref,
    split_sources,
)
from zocrates_contracts import EvidenceChunk, SourceRef, UnsupportedClaim

__all__ = ["build_coordinator_view", "split_sources", "strip_citations", "to_author_year"]

_CONSIDERED_RE = re.compile(
    r'^(?:#{1,2}[ \t]+Other Considered Sources[ \t]*$|<details class="considered-sources">)',
    re.MULTILINE,
)
_ITEM_KEY_RE = re.compile(r'data-item-key="([^"]*)"')
_MAX_INDEX = 99  # tokens hold at most two digits


def _best_chunks(chunks: Sequence[EvidenceChunk]) -> dict[str, EvidenceChunk]:
    best: dict[str, EvidenceChunk] = {}
    for chunk in chunks:
        best.setdefault(chunk.item_key, chunk)
    return best


def _author_year_prose(prose: str, chunks: Sequence[EvidenceChunk]) -> str:
    """Numeric tokens replaced by `(Author, Year; Author, Year)`; out-of-range ones removed."""
    view = mask(prose)
    tokens = find_tokens(view.masked, len(chunks))
    if not tokens:
        return prose

    def replace(token: Token) -> str | None:
        if not token.valid:
            return None
        items = dict.fromkeys(chunks[i - 1].item_key for i in token.indices)
        by_key = {chunks[i - 1].item_key: chunks[i - 1] for i in reversed(token.indices)}
        label = "(" + "; ".join(author_year(by_key[key]) for key in items) + ")"
        before = prose[token.start - 1 : token.start]
        return label if not before or before.isspace() or before in "([" else " " + label

    return splice_tokens(prose, tokens, replace)


def _bibliography(refs: Sequence[SourceRef], considered: Sequence[SourceRef]) -> str:
    def entry(ref: SourceRef) -> str:
        heading, title, publication = entry_parts(ref)
        parts = [f"**{heading}**."]
        if title:
            parts.append(emphasised(title, "*", "*"))
        if publication:
            parts.append(emphasised(publication, "", ""))
        return "- " + " ".join(parts)

    sections = []
    if refs:
        sections.append("\n".join([CITED_HEADING, *map(entry, refs)]))
    if considered:
        sections.append("\n".join([CONSIDERED_HEADING, *map(entry, considered)]))
    return "\n\n".join(sections)


def _join(prose: str, bibliography: str, had_sources: bool) -> str:
    if had_sources or bibliography:
        prose = prose.rstrip()
    if not bibliography:
        return prose
    return f"{prose}\n\n{bibliography}" if prose else bibliography


#: What the coordinator's memory says after a claim whose every citation failed verification.
UNSUPPORTED_NOTE = " (not supported by its cited source)"


def unsupported_note(claim: UnsupportedClaim) -> str:
    """`UNSUPPORTED_NOTE`, naming the numbers none of the claim's sources prints when the
    verifier found some: " (not supported by its cited source, which does not print 783)"."""
    if not claim.unprinted_numbers:
        return UNSUPPORTED_NOTE
    return f"{UNSUPPORTED_NOTE[:-1]}, which does not print {', '.join(claim.unprinted_numbers)})"


def _with_unsupported_notes(resolution: Resolution) -> str:
    prose, out, cursor = resolution.prose, [], 0
    for claim in sorted(resolution.unsupported, key=lambda c: c.at):
        out += [prose[cursor : claim.at], unsupported_note(claim)]
        cursor = claim.at
    return "".join(out) + prose[cursor:]


def _refs(keys: Sequence[str], best: dict[str, EvidenceChunk]) -> list[SourceRef]:
    return [source_ref(best[key]) for key in keys if key in best]


def build_coordinator_view(resolution: Resolution, ranked_chunks: Sequence[EvidenceChunk]) -> str:
    """The answer as the coordinator agent remembers it.

    Surviving tokens become parenthetical author-year citations, then a clean markdown
    bibliography of both tiers (`- **Smith (2020)**. *Title*. Venue.`) follows: no HTML,
    no item keys, no chunk numbers. Both tiers are listed whatever the disclosure settings,
    so follow-up questions can name any source that was considered. A claim whose every
    citation failed verification is followed by `UNSUPPORTED_NOTE`, so that later turns do not
    build on it as on a checked statement.
    """
    chunks = list(ranked_chunks)
    prose, sources = split_sources(_with_unsupported_notes(resolution))
    best = _best_chunks(chunks)
    bibliography = _bibliography(_refs(resolution.cited_item_keys, best), _refs(resolution.considered_item_keys, best))
    return _join(_author_year_prose(prose, chunks), bibliography, bool(sources))


def to_author_year(text: str, ranked_chunks: Sequence[EvidenceChunk]) -> str:
    """Enriched markdown copied with citations visible.

    Tokens become `(Author, Year)` citations and the source sections, read from their
    `data-item-key` hooks, become a clean markdown bibliography with the same two tiers.
    """
    chunks = list(ranked_chunks)
    prose, sources = split_sources(text)
    cited_keys: list[str] = []
    considered_keys: list[str] = []
    if sources:
        m = _CONSIDERED_RE.search(sources)
        split = m.start() if m else len(sources)
        cited_keys = [unescape(k) for k in _ITEM_KEY_RE.findall(sources, 0, split)]
        considered_keys = [unescape(k) for k in _ITEM_KEY_RE.findall(sources, split)]
    best = _best_chunks(chunks)
    bibliography = _bibliography(_refs(cited_keys, best), _refs(considered_keys, best))
    return _join(_author_year_prose(prose, chunks), bibliography, bool(sources))


def strip_citations(text: str) -> str:
    """Enriched markdown copied with citations hidden: no tokens, no source sections.

    Every citation token is removed (whatever its index) with the whitespace before
    punctuation collapsed; code blocks come back byte for byte.
    """
    prose, sources = split_sources(text)
    tokens = find_tokens(mask(prose).masked, _MAX_INDEX)
    if tokens:
        prose = splice_tokens(prose, tokens, lambda token: None)
    return _join(prose, "", bool(sources))
