"""Unsupported claims: a claim whose every citation failed is listed, placed in the pruned prose."""

from __future__ import annotations

import pytest

from zocrates_citations import build_coordinator_view, resolve_citations_and_references
from zocrates_citations.unsupported import prose_as_chosen
from zocrates_contracts import UnsupportedClaim


def cut(prose: str, claim) -> str:
    return prose[: claim.start] + prose[claim.end :]


def test_a_claim_whose_only_citation_failed_is_placed_in_the_pruned_prose(make_chunks):
    text = "Twins share rates [1]. The rate is ninety percent [2]. Costs fell [1]."
    resolved = resolve_citations_and_references(
        text, make_chunks("ab"), support_probabilities={1: [0.9, 0.8], 2: [0.42]}
    )
    prose = resolved.prose
    assert prose == "Twins share rates [1]. The rate is ninety percent. Costs fell [1]."
    [claim] = resolved.unsupported
    assert prose[claim.start : claim.end] == "The rate is ninety percent."
    assert prose[: claim.at].endswith("ninety percent")
    assert claim.probability == 0.42
    assert claim.claim == "The rate is ninety percent."
    assert [(o.index, o.occurrence) for o in claim.occurrences] == [(2, 1)]
    assert cut(prose, claim) == "Twins share rates [1].  Costs fell [1]."


def test_a_claim_with_one_surviving_citation_is_supported(make_chunks):
    resolved = resolve_citations_and_references(
        "Both agree [1, 2]. One more [1][2].", make_chunks("ab"), support_probabilities={1: [0.9, 0.1], 2: [0.1, 0.7]}
    )
    assert resolved.prose == "Both agree [1]. One more [2]."
    assert resolved.unsupported == []


def test_side_by_side_brackets_that_all_failed_are_one_claim_with_the_best_probability(make_chunks):
    resolved = resolve_citations_and_references(
        "First point [1]. Second point holds [1][2, 3].",
        make_chunks("abc"),
        support_probabilities={1: [0.9, 0.2], 2: [0.55], 3: [0.3]},
    )
    [claim] = resolved.unsupported
    # (Pruning keeps the space before a bracket that another bracket follows.)
    assert resolved.prose[claim.start : claim.end] == "Second point holds ."
    assert resolved.prose[claim.end :] == ""
    assert claim.probability == 0.55
    assert [(o.index, o.occurrence) for o in claim.occurrences] == [(1, 2), (2, 1), (3, 1)]


def test_an_unsupported_claim_names_the_numbers_none_of_its_passages_prints(make_chunks):
    """Each occurrence keeps what the verifier's number rule found; the claim names only the
    numbers every one of its failed passages lacks, so the reader is not told a passage lacks a
    number it prints."""
    resolved = resolve_citations_and_references(
        "Rates fell by 35% in 120 wards [1][2]. Costs fell by 12% [3].",
        make_chunks("abc"),
        support_probabilities={1: [0.2], 2: [0.2], 3: [0.4]},
        unprinted_numbers={1: [["35", "120"]], 2: [["35"]], 3: [[]]},
    )
    first, second = resolved.unsupported
    assert first.unprinted_numbers == ["35"]
    assert second.unprinted_numbers == []  # failed for another reason: no number is blamed
    occurrences = {c.index: c.occurrences[0].unprinted_numbers for c in resolved.citations}
    assert occurrences == {1: ["35", "120"], 2: ["35"], 3: []}


def test_a_claim_in_the_middle_of_a_sentence_leaves_the_sentence_its_punctuation(make_chunks):
    resolved = resolve_citations_and_references(
        "Results improved [1] and costs fell sharply in every region [2].",
        make_chunks("ab"),
        support_probabilities={1: [0.9], 2: [0.1]},
    )
    [claim] = resolved.unsupported
    assert resolved.prose[claim.start : claim.end] == "and costs fell sharply in every region"
    assert cut(resolved.prose, claim) == "Results improved [1] ."


def test_a_forward_claim_covers_its_whole_sentence(make_chunks):
    resolved = resolve_citations_and_references(
        "According to Smith [1], the rate doubled. Next.", make_chunks("a"), support_probabilities={1: [0.2]}
    )
    [claim] = resolved.unsupported
    assert resolved.prose == "According to Smith, the rate doubled. Next."
    assert resolved.prose[claim.start : claim.end] == "According to Smith, the rate doubled."
    assert resolved.prose[: claim.at] == "According to Smith"


def test_a_list_item_claim_starts_at_its_line(make_chunks):
    text = "Findings:\n\n- Rates vary [1].\n- Rates are fixed [2].\n"
    resolved = resolve_citations_and_references(text, make_chunks("ab"), support_probabilities={1: [0.9], 2: [0.3]})
    [claim] = resolved.unsupported
    assert resolved.prose[claim.start : claim.end] == "- Rates are fixed."


def test_unverified_and_kept_claims_are_not_unsupported(make_chunks):
    resolved = resolve_citations_and_references(
        "A [1]. B [2]. C [3].", make_chunks("abc"), support_probabilities={1: [None], 3: [0.7]}
    )
    assert resolved.unsupported == []


def test_no_claim_is_unsupported_when_citations_are_disabled(make_chunks):
    resolved = resolve_citations_and_references(
        "Claim [1].", make_chunks("a"), citations_enabled=False, support_probabilities={1: [0.1]}
    )
    assert resolved.unsupported == []


def test_positions_account_for_every_pruned_and_rewritten_token_before_them(make_chunks):
    text = "Alpha [1, 2, 99]. Beta `code [1]` is fine [1]. Gamma is wrong [2]. Delta [1]."
    resolved = resolve_citations_and_references(
        text, make_chunks("ab"), support_probabilities={1: [0.9, 0.9, 0.9], 2: [0.1, 0.2]}
    )
    assert resolved.prose == "Alpha [1]. Beta `code [1]` is fine [1]. Gamma is wrong. Delta [1]."
    [claim] = resolved.unsupported
    assert resolved.prose[claim.start : claim.end] == "Gamma is wrong."
    assert claim.probability == 0.2


def test_a_higher_threshold_makes_more_claims_unsupported_from_the_same_probabilities(make_chunks):
    text = "One [1]. Two [2]."
    probabilities = {1: [0.9], 2: [0.65]}
    assert (
        resolve_citations_and_references(text, make_chunks("ab"), support_probabilities=probabilities).unsupported == []
    )
    stricter = resolve_citations_and_references(
        text, make_chunks("ab"), support_probabilities=probabilities, verification_threshold=0.7
    )
    assert [stricter.prose[c.start : c.end] for c in stricter.unsupported] == ["Two."]


def test_the_coordinator_remembers_an_unsupported_claim_as_unsupported(make_chunks):
    chunks = make_chunks("ab")
    resolved = resolve_citations_and_references(
        "Twins share rates [1]. The rate is ninety percent [2].", chunks, support_probabilities={1: [0.9], 2: [0.1]}
    )
    view = build_coordinator_view(resolved, chunks)
    assert "The rate is ninety percent (not supported by its cited source)." in view
    assert "[2]" not in view and view.count("(not supported") == 1
    numbered = resolve_citations_and_references(
        "The rate is 90% [1].", chunks, support_probabilities={1: [0.2]}, unprinted_numbers={1: [["90"]]}
    )
    # a later turn knows why, so a follow-up can ask for the number the passage does print
    assert "The rate is 90% (not supported by its cited source, which does not print 90)." in (
        build_coordinator_view(numbered, chunks)
    )


# The same cases as plugin/test/unsupported.test.js: the sidebar and the export cut alike.
PROSE = "Twins share rates [1]. The rate is ninety percent. Costs fell [1]."
LIST = "Findings:\n\n- Rates vary [1].\n- Rates are fixed 𝑥.\n- Costs fell [1]."


def claim_at(start, end, at):
    return UnsupportedClaim(
        start=start, end=end, at=at, claim="c", probability=0.42, occurrences=[{"index": 1, "occurrence": 1}]
    )


@pytest.mark.parametrize(
    ("prose", "claim", "mode", "expected"),
    [
        (
            PROSE,
            (23, 50, 49),
            "remove",
            "Twins share rates [1]. Costs fell [1].",
        ),
        (
            PROSE,
            (23, 50, 49),
            "mark",
            "Twins share rates [1]. The rate is ninety percent [unsupported]. Costs fell [1].",
        ),
        (PROSE, (23, 50, 49), "leave", PROSE),
        (
            LIST,
            (29, 49, 48),
            "remove",
            "Findings:\n\n- Rates vary [1].\n- Costs fell [1].",
        ),
        (
            LIST,
            (29, 49, 48),
            "mark",
            "Findings:\n\n- Rates vary [1].\n- Rates are fixed 𝑥 [unsupported].\n- Costs fell [1].",
        ),
        ("𝑥 grows [1] and 𝑦 falls sharply in every region.", (12, 47, 47), "remove", "𝑥 grows [1]."),
    ],
)
def test_prose_as_chosen_marks_cuts_or_leaves_as_the_sidebar_does(prose, claim, mode, expected):
    assert prose_as_chosen(prose, [claim_at(*claim)], mode) == expected


def test_a_claim_past_the_prose_is_left_alone():
    assert prose_as_chosen("Short.", [claim_at(2, 60, 3)], "remove") == "Short."
