"""Citation quality of an answer (ALCE's citation recall and precision with per-pair
probabilities): hand-built answers whose figures are known."""

from __future__ import annotations

import pytest

from zocrates_citations import parse_answer, resolve_citations_and_references
from zocrates_citations.quality import citation_quality, claim_sentences


def quality(text: str, chunks, probabilities, **options):
    answer = parse_answer(text, len(chunks))
    resolved = resolve_citations_and_references(answer, chunks, support_probabilities=probabilities)
    return citation_quality(answer, resolved.citations, **options)


def test_claim_sentences_leave_out_headings_code_and_lone_tokens():
    text = (
        "# Findings\n\nThe trials found:\n\nAspirin lowers stroke risk [1]. It also causes bleeding. [2]\n\n"
        "- a listed finding [1]\n- [2] another one\n\n```\nprint(x[1]).\n```\n"
    )
    answer = parse_answer(text, 2)
    assert [text[s:e] for s, e in claim_sentences(answer)] == [
        "Aspirin lowers stroke risk [1].",
        "It also causes bleeding.",
        "- a listed finding [1]",
        "- [2] another one",
    ]


def test_recall_precision_and_uncited_sentences_of_a_known_answer(make_chunks):
    text = (
        "Aspirin lowers stroke risk [1]. It causes bleeding [2]. "
        "Statins help too [1, 2]. Nobody knows why. The effect is large [3]."
    )
    # [1]: 0.9 (supports), 0.7 (supports); [2]: 0.2 (no), 0.3 (no); [3]: unverified
    found = quality(text, make_chunks("abc"), {1: [0.9, 0.7], 2: [0.2, 0.3]})
    assert (found.claims, found.supported, found.uncited, found.unverified) == (5, 2, 1, 1)
    assert (found.citations, found.supporting) == (4, 2)
    assert found.recall == pytest.approx(2 / 4)  # the unverified sentence is left out
    assert found.precision == pytest.approx(2 / 4)  # the unverified citation counts neither way


def test_a_token_after_the_full_stop_cites_the_sentence_it_ends(make_chunks):
    found = quality("Aspirin lowers stroke risk. [1] Bleeding is rare.", make_chunks("a"), {1: [0.95]})
    assert (found.claims, found.supported, found.uncited) == (2, 1, 1)
    assert found.recall == 0.5 and found.precision == 1.0


def test_a_fully_supported_answer_scores_one_and_an_unverified_one_has_no_figures(make_chunks):
    text = "Aspirin lowers stroke risk [1]. Statins lower cholesterol [2]."
    supported = quality(text, make_chunks("ab"), {1: [0.9], 2: [0.8]})
    assert (supported.recall, supported.precision, supported.uncited) == (1.0, 1.0, 0)
    unverified = quality(text, make_chunks("ab"), None)
    assert (unverified.unverified, unverified.citations) == (2, 0)
    assert unverified.recall is None and unverified.precision is None


def test_notes_after_the_answer_are_not_claims(make_chunks):
    answer = "Aspirin lowers stroke risk [1]."
    text = answer + "\n\n_Note: this is demo mode._"
    assert quality(text, make_chunks("a"), {1: [0.9]}).claims == 2
    found = quality(text, make_chunks("a"), {1: [0.9]}, end=len(answer))
    assert (found.claims, found.uncited, found.recall) == (1, 0, 1.0)


def test_source_sections_the_writer_added_are_not_claims(make_chunks):
    text = "Aspirin lowers stroke risk [1].\n\n# Cited Sources\n- Smith (2001). A paper."
    assert quality(text, make_chunks("a"), {1: [0.9]}).claims == 1


def test_a_bracket_whose_passages_support_the_claim_together_makes_its_sentence_supported(make_chunks):
    text = "Aspirin lowers stroke risk but raises bleeding [1, 2]. Statins help [1][3]. Costs fell [2][3]."
    answer = parse_answer(text, 3)
    # Every single index is below the threshold; the first bracket's joint check reaches it, the
    # second's does not, the third's was not scored.
    singles = {1: [0.2, 0.3], 2: [0.4, 0.1], 3: [0.3, 0.2]}
    joint = {1: [0.8, 0.5], 2: [0.8, None], 3: [0.5, None]}
    resolved = resolve_citations_and_references(
        answer, make_chunks("abc"), support_probabilities=singles, joint_support=joint
    )
    found = citation_quality(answer, resolved.citations, threshold=0.6)
    assert (found.claims, found.supported, found.unverified, found.recall) == (3, 1, 0, 1 / 3)
    assert (found.citations, found.supporting) == (6, 0)  # precision stays per citation
    assert citation_quality(answer, resolved.citations).supported == 0  # no threshold: joint checks not counted
    # Every index unverified: a sentence whose joint check was scored is judged, one without is not.
    resolved = resolve_citations_and_references(answer, make_chunks("abc"), joint_support=joint)
    found = citation_quality(answer, resolved.citations, threshold=0.6)
    assert (found.supported, found.unverified, found.citations) == (1, 1, 0)
