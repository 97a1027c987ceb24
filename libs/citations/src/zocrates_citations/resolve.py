"""Verified resolution: prune failing citation occurrences, partition sources into two tiers.

Each occurrence of each index is judged alone against the threshold (never a max over a
chunk's occurrences); a compound bracket keeps the indices that survive (`[1, 2]` -> `[1]`)
and disappears when none does. A claim whose every citation disappears is listed as
unsupported, with where it stands in the pruned prose, so that no client shows it as an
accepted uncited statement without the user having chosen that. Sources are partitioned at item level (several chunks of one
item count once) into a cited tier C and a considered tier R with U = C ∪ R and C ∩ R = ∅:
an item is cited iff one of its occurrences survives anywhere. When the text holds no valid
token at all, or citations are disabled, every retrieved item is cited (zero-citation
fallback); when tokens existed and all failed, the cited tier stays empty.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from html import escape

from pydantic import BaseModel, ConfigDict, Field

from zocrates_citations.authors import format_authors
from zocrates_citations.claims import ParsedAnswer, parse_answer
from zocrates_citations.parsing import Token, format_token, mask, splice_tokens_mapped
from zocrates_contracts import (
    SUPPORT_THRESHOLD,
    Citation,
    CitationOccurrence,
    CitedOccurrence,
    EvidenceChunk,
    References,
    SourceRef,
    TextSpan,
    TurnRecord,
    UnsupportedClaim,
    Verdict,
)

CITED_HEADING = "# Cited Sources"
CONSIDERED_HEADING = "## Other Considered Sources"

_SOURCES_RE = re.compile(
    r"^(?:#{1,2}[ \t]+(?:Cited Sources|Other Considered Sources)[ \t]*$"
    r'|<details class="considered-sources">)',
    re.MULTILINE,
)


def split_sources(text: str) -> tuple[str, str]:
    """`(prose, sources)`: the answer and its source sections (found outside code only)."""
    m = _SOURCES_RE.search(mask(text).masked)
    if m is None:
        return text, ""
    return text[: m.start()], text[m.start() :]


def upgrade_turn_record(record: TurnRecord) -> TurnRecord:
    """A turn record at the current version: one stored before version 2 gets the `prose` and
    `sources` that clients used to split out of its `text` (itself unchanged)."""
    if record.schema_version >= 2:
        return record
    prose, sources = split_sources(record.text)
    return TurnRecord.model_validate(
        record.model_dump() | {"schema_version": TurnRecord.SCHEMA_VERSION, "prose": prose, "sources": sources}
    )


class VerificationCounts(BaseModel):
    """Occurrence counts by verdict, named as in `VerificationSummary`."""

    model_config = ConfigDict(frozen=True)

    total: int = 0
    kept: int = 0
    demoted: int = 0
    fail_open: int = 0


class Resolution(BaseModel):
    """A resolved answer: what the UI renders and what the turn stores."""

    model_config = ConfigDict(frozen=True)

    text: str = Field(description="Enriched markdown: the prose, then the source sections")
    prose: str = Field(description="The answer with surviving tokens only, no source sections")
    sources: str = Field(
        default="",
        description="How `text` ends: its source sections as `split_sources` finds them (model-"
        "written ones too), so that `text` is what comes before them followed by `sources`",
    )
    citations: list[Citation] = Field(
        default_factory=list, description="Every chunk referenced by a valid token, by index"
    )
    references: References = Field(default_factory=References, description="The disclosed tiers (empty when disabled)")
    cited_item_keys: list[str] = Field(default_factory=list, description="Tier C, in text order")
    considered_item_keys: list[str] = Field(
        default_factory=list, description="Tier R, in rank order (always the full complement)"
    )
    cited_chunk_ids: list[str] = Field(
        default_factory=list, description="Chunks with at least one surviving occurrence"
    )
    unsupported: list[UnsupportedClaim] = Field(
        default_factory=list, description="Claims whose every citation failed, placed in `prose`"
    )
    counts: VerificationCounts = Field(default_factory=VerificationCounts)
    zero_citation_fallback: bool = Field(default=False, description="Every item was cited because the text cited none")


def _probabilities(
    support_probabilities: Mapping[int | str, Sequence[float | None]] | None,
) -> dict[int, Sequence[float | None]]:
    if not support_probabilities:
        return {}
    result: dict[int, Sequence[float | None]] = {}
    for key, values in support_probabilities.items():
        index = int(key)  # keys arrive as strings after a JSON round trip
        for occurrence, p in enumerate(values, start=1):
            if p is not None and not (math.isfinite(p) and 0.0 <= p <= 1.0):
                raise ValueError(
                    f"support probability for chunk {index} occurrence {occurrence} must be "
                    f"None or within [0, 1], got {p!r}; pass None for an unverified occurrence"
                )
        result[index] = [None if p is None else float(p) for p in values]
    return result


def _verdict(p: float | None, threshold: float) -> Verdict:
    if p is None:
        return "FAIL_OPEN"
    return "KEPT" if p >= threshold else "DEMOTED"


def _quote(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    space = cut.rfind(" ")
    if space > max_chars // 2:  # end on a word unless that loses half the quote
        cut = cut[:space]
    return cut.rstrip() + "…"


def _quoted_length(text: str, max_chars: int | None) -> int:
    """How much of `text` its quote (`_quote`) shows: all of it, or the part before the "…"."""
    quote = _quote(text, max_chars)
    return len(quote) if quote == text else len(quote) - 1


def _within(spans: Sequence[TextSpan], length: int) -> list[TextSpan]:
    """`spans` clipped to the first `length` characters; those wholly beyond are dropped."""
    return [TextSpan(start=s.start, end=min(s.end, length)) for s in spans if s.start < length]


def source_ref(chunk: EvidenceChunk, abstract_only: bool = False) -> SourceRef:
    """The item-level reference of a chunk (its item's metadata, never its text)."""
    return SourceRef(
        item_key=chunk.item_key,
        library_id=chunk.library_id,
        title=chunk.title,
        authors=format_authors(chunk.creators),
        year=chunk.year,
        publication=chunk.publication,
        abstract_only=abstract_only,
    )


def is_abstract_record(chunk: EvidenceChunk) -> bool:
    """A passage of the item's Abstract field (indexed on its own), not of a file or note."""
    return chunk.kind == "abstract" and chunk.attachment_key is None


ABSTRACT_ONLY = "(abstract only)"


def entry_parts(ref: SourceRef) -> tuple[str, str, str]:
    """`(heading, title, publication)` of a bibliography entry; parts may be empty.

    The heading is `Authors (Year)`, or `Title (Year)` when there are no authors (the
    title is then not repeated).
    """
    title = ref.title.strip()
    year = str(ref.year) if ref.year is not None else "n.d."
    if ref.authors:
        return f"{ref.authors} ({year})", title, (ref.publication or "").strip()
    return f"{title or 'Untitled source'} ({year})", "", (ref.publication or "").strip()


def emphasised(text: str, open_: str, close: str) -> str:
    """`*Title*.`: emphasis, then a full stop unless the text ends a sentence itself."""
    stop = "" if text.endswith((".", "?", "!")) else "."
    return f"{open_}{text}{close}{stop}"


_MARKDOWN_ESCAPES = str.maketrans({c: "\\" + c for c in "\\`*_[]"})


def _markdown_escape(text: str) -> str:
    return escape(text, quote=False).translate(_MARKDOWN_ESCAPES)


def _item_hooks(ref: SourceRef) -> str:
    """The attributes the UI finds the item by: its key, and its library when not My Library."""
    hooks = f' data-item-key="{escape(ref.item_key, quote=True)}"'
    if ref.library_id != "user":
        hooks += f' data-library-id="{escape(ref.library_id, quote=True)}"'
    return hooks


def _entry(ref: SourceRef, esc, strong: tuple[str, str], em: tuple[str, str]) -> str:
    """A bibliography entry's text, its parts escaped by `esc` and marked up by `strong`/`em`."""
    heading, title, publication = entry_parts(ref)
    parts = [f"{strong[0]}{esc(heading)}{strong[1]}."]
    if title:
        parts.append(emphasised(esc(title), *em))
    if publication:
        parts.append(emphasised(esc(publication), "", ""))
    if ref.abstract_only:
        parts.append(ABSTRACT_ONLY)
    return f'<span class="zotero-source-link"{_item_hooks(ref)}>{" ".join(parts)}</span>'


def _cited_entry(ref: SourceRef) -> str:
    return "- " + _entry(ref, _markdown_escape, ("**", "**"), ("*", "*"))


def _considered_entry(ref: SourceRef) -> str:
    return f"    <li>{_entry(ref, lambda text: escape(text, quote=False), ('<strong>', '</strong>'), ('<em>', '</em>'))}</li>"


def render_source_sections(references: References) -> str:
    """`# Cited Sources` and `## Other Considered Sources` as the UI expects them."""
    sections = []
    if references.cited:
        sections.append("\n".join([CITED_HEADING, *(_cited_entry(r) for r in references.cited)]))
    if references.considered:
        n = len(references.considered)
        noun = "source" if n == 1 else "sources"
        sections.append(
            "\n".join(
                [
                    CONSIDERED_HEADING,
                    '<details class="considered-sources">',
                    f"  <summary>{escape(references.considered_summary or f'{n} additional {noun} analyzed by search agent')}</summary>",
                    "  <ul>",
                    *(_considered_entry(r) for r in references.considered),
                    "  </ul>",
                    "</details>",
                ]
            )
        )
    return "\n\n".join(sections)


def resolve_citations_and_references(
    text: str | ParsedAnswer,
    ranked_chunks: Sequence[EvidenceChunk],
    *,
    citations_enabled: bool = True,
    references_enabled: bool = True,
    considered_disclosure: bool = True,
    support_probabilities: Mapping[int | str, Sequence[float | None]] | None = None,
    verification_threshold: float = SUPPORT_THRESHOLD,
    max_quote_chars: int | None = None,
    refused: bool = False,
    quotes: Mapping[int | str, Sequence[float | None]] | None = None,
    support_spans: Mapping[int | str, Sequence[Sequence[TextSpan]]] | None = None,
    joint_support: Mapping[int | str, Sequence[float | None]] | None = None,
    unprinted_numbers: Mapping[int | str, Sequence[Sequence[str]]] | None = None,
) -> Resolution:
    """Resolve an answer's citation tokens against the chunks it was written from.

    `ranked_chunks[i]` is chunk index `i + 1`. `support_probabilities` maps a chunk index to
    the probability of each of its occurrences in document order (as numbered by
    `extract_claim_occurrences`); a missing or `None` entry fails open (the occurrence
    survives as FAIL_OPEN). Out-of-range indices are removed from the text. With
    `citations_enabled=False` every token is removed and every item is cited;
    `references_enabled=False` renders no source sections and discloses no references;
    `considered_disclosure=False` hides the considered tier (its keys are still reported).
    Quotes are the full chunk text unless `max_quote_chars` is set. A `refused` answer (one
    that says the evidence does not answer the question) cites nothing: every retrieved item
    is listed as considered, under "Searched N passages from M items". `quotes` maps a chunk
    index to the question-relevance of each of its occurrences that quotes the passage verbatim
    (in the order of `support_probabilities`); those occurrences are marked `quoted`.
    `text` may be the answer already parsed by `parse_answer(text, len(ranked_chunks))` (as
    claim extraction used it): its tokens and claims are then reused, not computed again.
    `support_spans` maps a chunk index to, per occurrence (in the order of
    `support_probabilities`), where the verifier found the chunk's text to support the claim;
    a KEPT occurrence carries them as offsets into its citation's `quote` (a span past a quote
    limit is clipped to it, or dropped).
    `joint_support` has the shape of `support_probabilities`: per chunk index, for each
    occurrence, the joint probability of the bracket it belongs to (the claim against the
    bracket's passages together; `None` for a bracket of one passage or an unscored check). It is
    stored on the occurrence (`joint_support`) and judges no verdict: each index keeps its own.
    `unprinted_numbers` has the shape of `support_spans`: per occurrence, the numbers its claim
    states that the chunk does not print (the verifier's number rule), stored on the occurrence;
    an unsupported claim names those that none of its passages prints.
    """
    if not 0.0 <= verification_threshold <= 1.0:
        raise ValueError(f"verification_threshold must be within [0, 1], got {verification_threshold!r}")
    if max_quote_chars is not None and max_quote_chars < 1:
        raise ValueError(f"max_quote_chars must be None (no limit) or at least 1, got {max_quote_chars!r}")
    chunks = list(ranked_chunks)
    probabilities = _probabilities(support_probabilities)
    joint_by_index = _probabilities(joint_support)
    quoted_by_index = {int(k): list(v) for k, v in (quotes or {}).items()}
    spans_by_index = {int(k): list(v) for k, v in (support_spans or {}).items()}
    unprinted_by_index = {int(k): list(v) for k, v in (unprinted_numbers or {}).items()}
    if isinstance(text, ParsedAnswer):
        if text.n_chunks != len(chunks):
            raise ValueError(
                f"the answer was parsed against {text.n_chunks} chunks but {len(chunks)} were "
                "given; parse it with parse_answer(text, len(ranked_chunks))"
            )
        answer = text
    else:
        answer = parse_answer(text, len(chunks))
    text, tokens = answer.text, list(answer.tokens)
    any_valid = any(t.valid for t in tokens)

    kept_by_token: dict[int, tuple[int, ...]] = {}
    failed: dict[int, list[tuple[int, CitationOccurrence]]] = {}  # token start -> its demoted occurrences
    occurrences: dict[int, list[CitationOccurrence]] = {}
    counts = {"KEPT": 0, "DEMOTED": 0, "FAIL_OPEN": 0}
    cited_items: dict[str, None] = {}
    if citations_enabled and any_valid:
        for token, claim in zip(tokens, answer.claims):
            if claim is None:
                continue
            kept = []
            for index in token.indices:
                per_index = occurrences.setdefault(index, [])
                given = probabilities.get(index, ())
                p = given[len(per_index)] if len(per_index) < len(given) else None
                quoted = quoted_by_index.get(index, ())
                relevance = quoted[len(per_index)] if len(per_index) < len(quoted) else None
                verdict = _verdict(p, verification_threshold)
                spans = spans_by_index.get(index, ())
                joint = joint_by_index.get(index, ())
                unprinted = unprinted_by_index.get(index, ())
                supporting = spans[len(per_index)] if verdict == "KEPT" and len(per_index) < len(spans) else ()
                counts[verdict] += 1
                per_index.append(
                    CitationOccurrence(
                        occurrence=len(per_index) + 1,
                        claim=claim,
                        compound=len(token.indices) > 1,
                        probability=p,
                        verdict=verdict,
                        quoted=len(per_index) < len(quoted),
                        relevance=relevance,
                        spans=_within(supporting, _quoted_length(chunks[index - 1].text, max_quote_chars)),
                        joint_support=joint[len(per_index)] if len(per_index) < len(joint) else None,
                        unprinted_numbers=list(unprinted[len(per_index)]) if len(per_index) < len(unprinted) else [],
                    )
                )
                if verdict != "DEMOTED":
                    kept.append(index)
                    cited_items.setdefault(chunks[index - 1].item_key)
            kept_by_token[token.start] = tuple(kept)
            if not kept:
                failed[token.start] = [(index, occurrences[index][-1]) for index in token.indices]

    def replace(token: Token) -> str | None:
        kept = kept_by_token.get(token.start)
        return format_token(kept) if kept else None

    prose, position = splice_tokens_mapped(text, tokens, replace)
    unsupported = unsupported_claims(answer, failed, position) if failed else []

    citations = [
        _citation(index, chunks[index - 1], occurrences[index], max_quote_chars) for index in sorted(occurrences)
    ]
    best_chunk: dict[str, EvidenceChunk] = {}
    abstract_only: dict[str, bool] = {}
    for chunk in chunks:
        best_chunk.setdefault(chunk.item_key, chunk)
        abstract_only[chunk.item_key] = abstract_only.get(chunk.item_key, True) and is_abstract_record(chunk)
    fallback = (not citations_enabled or not any_valid) and not refused
    cited_keys = list(best_chunk) if fallback else list(cited_items)
    considered_keys = [] if fallback else [key for key in best_chunk if key not in cited_items]

    searched = f"Searched {len(chunks)} passages from {len(best_chunk)} items" if refused else None
    references = References()
    if references_enabled:
        references = References(
            considered_summary=searched,
            cited=[source_ref(best_chunk[k], abstract_only[k]) for k in cited_keys],
            considered=[source_ref(best_chunk[k], abstract_only[k]) for k in considered_keys]
            if considered_disclosure
            else [],
        )
    sections = render_source_sections(references)
    if sections and prose.strip():
        enriched = f"{prose.rstrip()}\n\n{sections}"
    else:
        enriched = sections or prose

    return Resolution(
        text=enriched,
        prose=prose,
        sources=split_sources(enriched)[1],
        citations=citations,
        references=references,
        cited_item_keys=cited_keys,
        considered_item_keys=considered_keys,
        cited_chunk_ids=[c.chunk_id for c in citations if c.survives],
        unsupported=unsupported,
        counts=VerificationCounts(
            total=sum(counts.values()),
            kept=counts["KEPT"],
            demoted=counts["DEMOTED"],
            fail_open=counts["FAIL_OPEN"],
        ),
        zero_citation_fallback=fallback,
    )


_TERMINAL_RE = re.compile(r"[.!?]+[\"'”’)\]]*")
_SENTENCE_OPENERS = "\n.!?:"


def unsupported_claims(
    answer: ParsedAnswer,
    failed: Mapping[int, Sequence[tuple[int, CitationOccurrence]]],
    position,
) -> list[UnsupportedClaim]:
    """The claims whose every bracket failed (`failed`: a failed bracket's start -> its demoted
    occurrences), placed in the pruned prose by `position` (raw offset -> prose offset).

    Brackets side by side cite one claim: it is unsupported only when all of them failed. A
    claim runs from the start of its claim span (past the punctuation and spaces that end the
    sentence before) to its last bracket, or to the end of the sentence when the claim reads
    forward ("According to Smith [1], ..."); a claim that starts its sentence also takes the
    sentence's closing punctuation, so removing it leaves the neighbouring sentences intact.
    """
    text, masked = answer.text, answer.view.masked
    claims = []
    for group in answer.runs:
        tokens = [answer.tokens[i] for i in group]
        if not all(t.start in failed for t in tokens):
            continue
        first, last = answer.claim_spans[group[0]], tokens[-1]
        start = first.start
        while start < last.start and (text[start].isspace() or text[start] in ".,;:!?)]|"):
            start += 1
        end = max(last.end, answer.claim_spans[group[-1]].end)
        before = start
        while before > 0 and text[before - 1] in " \t":
            before -= 1
        if (before == 0 or text[before - 1] in _SENTENCE_OPENERS) and (closing := _TERMINAL_RE.match(masked, end)):
            end = closing.end()
        demoted = [pair for t in tokens for pair in failed[t.start]]
        claims.append(
            UnsupportedClaim(
                start=position(start),
                end=position(end),
                at=position(tokens[0].start),
                claim=first.claim,
                probability=max(o.probability or 0.0 for _, o in demoted),
                occurrences=[CitedOccurrence(index=i, occurrence=o.occurrence) for i, o in demoted],
                unprinted_numbers=[
                    n for n in demoted[0][1].unprinted_numbers if all(n in o.unprinted_numbers for _, o in demoted)
                ],
            )
        )
    return claims


def _citation(
    index: int,
    chunk: EvidenceChunk,
    occurrences: list[CitationOccurrence],
    max_quote_chars: int | None,
) -> Citation:
    return Citation(
        index=index,
        chunk_id=chunk.chunk_id,
        item_key=chunk.item_key,
        library_id=chunk.library_id,
        attachment_key=chunk.attachment_key,
        title=chunk.title,
        authors=format_authors(chunk.creators),
        creators=list(chunk.creators),
        year=chunk.year,
        section=chunk.section,
        publication=chunk.publication,
        kind=chunk.kind,
        pages=chunk.pages,
        quote=_quote(chunk.text, max_quote_chars),
        occurrences=occurrences,
        survives=any(o.verdict != "DEMOTED" for o in occurrences),
    )
