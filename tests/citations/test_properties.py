"""Property-based tests over random answers, chunk counts and probabilities."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zocrates_citations import (
    build_coordinator_view,
    extract_claim_occurrences,
    parse_answer,
    resolve_citations_and_references,
    split_sources,
    strip_citations,
    to_author_year,
)
from zocrates_citations.claims import MAX_CLAIM_CHARS
from zocrates_citations.parsing import FILLER, find_tokens, mask, masked_regions
from zocrates_contracts import Creator, EvidenceChunk

pytestmark = pytest.mark.fuzz
# FUZZ_EXAMPLES raises the budget for a deeper local run; 200 keeps the suite fast.
FAST = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

WORDS = st.sampled_from(
    "the rate rose fell sharply in cohort twins mutation Smith et al. e.g. Fig. 2 i.e. J. "
    "≈ → — **bold** _it_ , ; : . ! ? ( ) 3.5 percent According to".split()
)
INDEX = st.integers(min_value=0, max_value=12)


@st.composite
def tokens(draw) -> str:
    numbers = draw(st.lists(INDEX, min_size=1, max_size=3))
    form = draw(st.sampled_from(["[{}]", "[E{}]", "[Chunk {}]", "【{}】"]))
    separator = draw(st.sampled_from([", ", ",", ";", " ; "]))
    if form == "[E{}]":
        return "[" + separator.join(f"E{n}" for n in numbers) + "]"
    return form.format(separator.join(str(n) for n in numbers))


CODE = st.builds(
    lambda body, n: st.sampled_from(
        [
            f"\n```\n{body} arr[{n}]\n\n val[{n}, 1]\n```\n",
            f"\n~~~python\n{body}[{n}]\n~~~\n",
            f" `{body}[{n}]` ",
            f" ![fig [{n}]](img[{n}].png) ",
            f"\n[{n}]: https://example.org/{body}\n",
        ]
    ),
    st.sampled_from(["x", "y = 1", "a  b\t"]),
    INDEX,
).flatmap(lambda s: s)

STRUCTURE = st.sampled_from(["\n\n", "\n- ", "\n1. ", "\n## Heading words\n", "\n| a | b |\n", "\n"])
RAW = st.text(alphabet="ab []【】,;0123E.!?\n#-*_~|()$`", max_size=8)
PIECES = st.one_of(WORDS, WORDS, WORDS, tokens(), tokens(), CODE, STRUCTURE, RAW)
TEXTS = st.lists(PIECES, max_size=60).map(" ".join)


@st.composite
def chunk_lists(draw) -> list[EvidenceChunk]:
    n = draw(st.integers(min_value=0, max_value=10))
    keys = draw(st.lists(st.sampled_from("ABCDEFG"), min_size=n, max_size=n))
    return [
        EvidenceChunk(
            chunk_id=f"c{i}",
            item_key=f"KEY{key}0000",
            title=f"Title {key}",
            creators=[Creator(last_name=f"Author{key}")],
            year=2000 + i,
            text=f"text {i}",
        )
        for i, key in enumerate(keys, start=1)
    ]


PROBABILITIES = st.one_of(
    st.none(),
    st.dictionaries(
        st.integers(min_value=1, max_value=12),
        st.lists(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)), max_size=6),
        max_size=12,
    ),
)


def code_pieces(text: str) -> list[str]:
    """The masked regions of a text, as they read in the original."""
    return [text[start:end] for start, end, _ in masked_regions(text)]


@FAST
@given(TEXTS, chunk_lists(), PROBABILITIES, st.booleans())
def test_tiers_partition_the_retrieved_items(text, chunks, probabilities, enabled):
    r = resolve_citations_and_references(text, chunks, support_probabilities=probabilities, citations_enabled=enabled)
    universe = {c.item_key for c in chunks}
    cited, considered = set(r.cited_item_keys), set(r.considered_item_keys)
    assert cited | considered == universe  # U = C ∪ R
    assert not cited & considered  # C ∩ R = ∅
    assert len(cited) == len(r.cited_item_keys) and len(considered) == len(r.considered_item_keys)
    surviving = {c.item_key for c in r.citations if c.survives}
    if r.zero_citation_fallback:
        assert cited == universe
    else:
        assert cited == surviving  # cited iff one of its occurrences survives
    has_valid = any(t.valid for t in find_tokens(mask(text).masked, len(chunks)))
    assert r.zero_citation_fallback == (not enabled or not has_valid)


@FAST
@given(TEXTS, chunk_lists(), PROBABILITIES)
def test_resolved_tokens_are_in_bounds_canonical_and_verified(text, chunks, probabilities):
    r = resolve_citations_and_references(text, chunks, support_probabilities=probabilities)
    found = find_tokens(mask(r.prose).masked, 99)
    survivors = {c.index for c in r.citations if c.survives}
    for token in found:
        assert token.valid and all(1 <= i <= len(chunks) for i in token.indices)
        assert set(token.indices) <= survivors
        assert r.prose[token.start : token.end] == "[" + ", ".join(map(str, token.indices)) + "]"
    assert r.counts.total == sum(len(c.occurrences) for c in r.citations)
    assert r.counts.total == r.counts.kept + r.counts.demoted + r.counts.fail_open
    assert sum(len(t.indices) for t in found) == r.counts.kept + r.counts.fail_open


@FAST
@given(TEXTS, chunk_lists(), PROBABILITIES)
def test_code_images_and_definitions_come_back_byte_identical(text, chunks, probabilities):
    r = resolve_citations_and_references(text, chunks, support_probabilities=probabilities)
    pieces = code_pieces(text)
    assert code_pieces(r.prose) == pieces
    assert code_pieces(strip_citations(r.text)) == pieces
    assert code_pieces(to_author_year(r.text, chunks)) == pieces
    assert code_pieces(build_coordinator_view(r, chunks)) == pieces


@FAST
@given(TEXTS, chunk_lists(), PROBABILITIES)
def test_resolution_is_idempotent_on_its_own_prose(text, chunks, probabilities):
    first = resolve_citations_and_references(text, chunks, support_probabilities=probabilities)
    second = resolve_citations_and_references(first.prose, chunks)
    assert second.prose == first.prose
    all_failed = not first.zero_citation_fallback and not first.cited_item_keys
    if not all_failed:  # the empty-Tier-1 safeguard is a fact of the turn, not of the text
        assert (second.cited_item_keys, second.considered_item_keys) == (
            first.cited_item_keys,
            first.considered_item_keys,
        )
        assert second.text == first.text


@FAST
@given(TEXTS, st.integers(min_value=0, max_value=12))
def test_claims_are_clean_bounded_and_numbered_per_index(text, n_chunks):
    occurrences = extract_claim_occurrences(text, n_chunks)
    seen: dict[int, int] = {}
    for o in occurrences:
        seen[o.chunk_index] = seen.get(o.chunk_index, 0) + 1
        assert 1 <= o.chunk_index <= n_chunks and o.occurrence == seen[o.chunk_index]
        assert FILLER not in o.claim and "**" not in o.claim and "`" not in o.claim
        assert len(o.claim) <= 2 * MAX_CLAIM_CHARS + 2
        assert not o.claim or o.claim[-1] in ".!?\"'”’)]"


@FAST
@given(TEXTS, chunk_lists(), PROBABILITIES, st.booleans())
def test_a_parsed_answer_resolves_exactly_as_its_text(text, chunks, probabilities, enabled):
    answer = parse_answer(text, len(chunks))
    assert list(answer.occurrences) == extract_claim_occurrences(text, len(chunks))
    options = {"support_probabilities": probabilities, "citations_enabled": enabled}
    assert resolve_citations_and_references(answer, chunks, **options) == (
        resolve_citations_and_references(text, chunks, **options)
    )


@FAST
@given(TEXTS, chunk_lists(), PROBABILITIES, st.booleans())
def test_the_text_is_what_precedes_the_sources_then_the_sources(text, chunks, probabilities, disclose):
    r = resolve_citations_and_references(
        text, chunks, support_probabilities=probabilities, considered_disclosure=disclose
    )
    assert r.text.endswith(r.sources)
    assert split_sources(r.text) == (r.text[: len(r.text) - len(r.sources)], r.sources)
