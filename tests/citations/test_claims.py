"""Per-occurrence claim extraction (seed 4.3): boundaries, clamp, forward scan, cleaning."""

from __future__ import annotations

import pytest

from zocrates_citations import ClaimOccurrence, extract_claim_occurrences
from zocrates_citations.claims import MAX_CLAIM_CHARS, MIN_CLAIM_CHARS, parse_answer


def claims(text: str, n_chunks: int = 9) -> list[str]:
    return [o.claim for o in extract_claim_occurrences(text, n_chunks)]


def test_one_occurrence_per_token_index_in_document_order_numbered_per_chunk():
    text = "First claim about rates rising [1]. Second claim about rates [2, 1]. Third one here [1]."
    assert [(o.chunk_index, o.occurrence, o.compound) for o in extract_claim_occurrences(text, 2)] == [
        (1, 1, False),
        (2, 1, True),
        (1, 2, True),
        (1, 3, False),
    ]


def test_compound_means_more_than_one_valid_index_in_the_bracket():
    [occurrence] = extract_claim_occurrences("The rate rose sharply across all cohorts [1, 99].", 3)
    assert occurrence == ClaimOccurrence(1, 1, "The rate rose sharply across all cohorts.", False)


def test_compound_bracket_indices_share_one_claim():
    a, b = extract_claim_occurrences("Both studies found that the rate rose sharply [1, 2].", 2)
    assert a.claim == b.claim == "Both studies found that the rate rose sharply."


def test_claim_is_bounded_by_the_previous_citation_in_the_same_paragraph():
    text = (
        "Mutation rates were estimated from twin pairs [1], and the estimate matched "
        "earlier family-based studies closely [2]."
    )
    assert claims(text) == [
        "Mutation rates were estimated from twin pairs.",
        "and the estimate matched earlier family-based studies closely.",
    ]


def test_claim_is_bounded_by_a_paragraph_break():
    text = "An earlier paragraph that says something else.\n\nThe estimate matched earlier studies closely [1]."
    assert claims(text) == ["The estimate matched earlier studies closely."]


@pytest.mark.parametrize("marker", ["- ", "* ", "+ ", "1. ", "12. ", "  - "])
def test_claim_is_bounded_by_a_list_item(marker):
    text = f"The results were as follows:\n{marker}the estimate matched earlier studies closely [1]"
    assert claims(text) == ["the estimate matched earlier studies closely."]


def test_heading_line_never_enters_the_claim():
    text = "### 4. Holoenzyme is a better noise filter\nThe holoenzyme filters noise more effectively [1]."
    assert claims(text) == ["The holoenzyme filters noise more effectively."]


def test_claim_is_bounded_by_a_table_row():
    text = "| study | rate |\n| Jonsson | the rate was 5.2 percent per generation [1] |"
    assert claims(text) == ["Jonsson | the rate was 5.2 percent per generation."]


def test_fenced_code_ends_the_block_before_a_claim():
    text = "Some text.\n```\ncode\n```\nThe estimate matched earlier studies closely [1]."
    assert claims(text) == ["The estimate matched earlier studies closely."]


def test_long_span_is_clamped_to_800_chars_and_starts_at_a_sentence():
    filler = "This sentence pads the paragraph with many words. " * 30
    text = filler + "The final sentence carries the actual claim [1]."
    [claim] = claims(text)
    assert len(claim) <= MAX_CLAIM_CHARS
    assert claim.startswith("This sentence pads")  # a whole sentence, not a fragment
    assert claim.endswith("The final sentence carries the actual claim.")


def test_clamp_without_any_sentence_end_starts_at_a_word():
    text = "word " * 300 + "end of claim [1]."
    [claim] = claims(text)
    assert len(claim) <= MAX_CLAIM_CHARS and claim.startswith("word ")


def test_short_span_scans_forward_to_the_end_of_the_sentence():
    assert claims("Rates [1] rose by five percent in the cohort. Next sentence.") == [
        "Rates rose by five percent in the cohort."
    ]
    assert len("Rates") < MIN_CLAIM_CHARS


def test_author_only_span_scans_forward_even_when_long():
    text = (
        "As reported by Kowalczyk-Wisniewski and Abernathy-Smith (2019) [1], the rate rose "
        "by five percent. Another sentence."
    )
    assert claims(text) == [
        "As reported by Kowalczyk-Wisniewski and Abernathy-Smith (2019), the rate rose by five percent."
    ]


def test_according_to_author_et_al_scans_forward():
    text = "According to Smith et al. [1], mutation rates double with paternal age. More text."
    assert claims(text) == ["According to Smith et al., mutation rates double with paternal age."]


def test_forward_scan_stops_at_the_next_citation():
    text = "Rates [1] rose sharply [2] in every cohort studied."
    assert claims(text)[0] == "Rates rose sharply."


def test_no_forward_scan_when_the_token_follows_a_finished_sentence():
    assert claims("Rates rose. [1] A different claim follows here.") == ["Rates rose."]


@pytest.mark.parametrize(
    "abbreviated",
    ["et al.", "e.g.", "i.e.", "Fig.", "Eq.", "cf.", "vs.", "approx.", "J."],
)
def test_abbreviations_and_initials_do_not_end_a_sentence(abbreviated):
    text = f"Rates [1] rose as shown by {abbreviated} Smith and colleagues in detail. Next sentence."
    assert claims(text) == [f"Rates rose as shown by {abbreviated} Smith and colleagues in detail."]


def test_abbreviation_guard_keeps_the_clamp_from_starting_mid_sentence():
    # The window opens among the padding words; the first period after it is "Fig.".
    text = "word " * 200 + "As shown in Fig. 3 the rate rose by five percent in every cohort [1]."
    [claim] = claims(text)
    assert claim.startswith("word ") and "As shown in Fig. 3 the rate rose" in claim


def test_markdown_is_stripped_and_a_bold_lead_in_stays_as_text():
    text = "- **Lead-in.** The _estimate_ matched *earlier* `family` [studies](https://x.org) closely [1]"
    assert claims(text) == ["Lead-in. The estimate matched earlier family studies closely."]


@pytest.mark.parametrize(
    ("symbol", "words"),
    [("≈", "about"), ("≥", "at least"), ("≤", "at most"), ("→", "to"), ("—", "-")],
)
def test_symbols_are_normalised(symbol, words):
    [claim] = claims(f"The measured mutation rate went {symbol} 5 percent per year [1].")
    assert claim == f"The measured mutation rate went {words} 5 percent per year."


def test_leading_punctuation_and_list_syntax_are_stripped():
    text = "Rates rose in the first cohort of the study [1]; ) , and they fell in the second cohort [2]."
    assert claims(text)[1] == "and they fell in the second cohort."


def test_terminal_punctuation_is_ensured():
    assert claims("The estimate matched earlier studies closely [1]") == [
        "The estimate matched earlier studies closely."
    ]
    assert claims("Did the estimate match earlier studies closely? [1]") == [
        "Did the estimate match earlier studies closely?"
    ]
    assert claims("The estimate matched earlier studies closely, [1]") == [
        "The estimate matched earlier studies closely."
    ]


def test_out_of_range_tokens_are_neither_boundaries_nor_stripped_from_the_claim():
    text = "Chang et al. (their refs. [44, 69]) measured the rate in the same way [1]."
    assert claims(text) == ["Chang et al. (their refs. [44, 69]) measured the rate in the same way."]


def test_masked_regions_do_not_leak_into_the_claim():
    text = "The chart ![plot [2]](p.png) shows that rates in `arr[2]` rose steadily [1]."
    assert claims(text, 1) == ["The chart shows that rates in arr[2] rose steadily."]


def test_a_token_with_no_text_around_it_has_an_empty_claim():
    assert claims("[1]") == [""]


def test_forward_scan_is_bounded():
    [claim] = claims("Rates [1] " + "rose and " * 400)
    assert len(claim) <= 2 * MAX_CLAIM_CHARS


def test_windows_line_endings_keep_the_same_boundaries():
    text = "## Heading\r\nAn earlier paragraph.\r\n\r\nThe estimate matched earlier studies closely [1]."
    assert claims(text) == ["The estimate matched earlier studies closely."]


def test_claim_extraction_and_resolution_share_one_tokenisation(monkeypatch, make_chunks):
    """Issue 15: the gateway parses an answer once; extraction and resolution both read it."""
    from zocrates_citations import claims as claims_module
    from zocrates_citations import parse_answer, resolve_citations_and_references

    masked = []
    real_mask = claims_module.mask
    monkeypatch.setattr(claims_module, "mask", lambda text: masked.append(text) or real_mask(text))
    chunks = make_chunks(["ITEMAAAA", "ITEMBBBB"])
    answer = parse_answer("Twins differ in rate [1]. The cohort was large [2].", len(chunks))
    assert [o.chunk_index for o in answer.occurrences] == [1, 2]
    resolution = resolve_citations_and_references(answer, chunks, support_probabilities={1: [0.9], 2: [0.1]})
    assert resolution.prose == "Twins differ in rate [1]. The cohort was large."
    assert len(masked) == 1


def test_an_answer_parsed_against_other_chunks_is_refused(make_chunks):
    from zocrates_citations import parse_answer, resolve_citations_and_references

    with pytest.raises(ValueError, match="parsed against 1 chunks but 2 were given"):
        resolve_citations_and_references(parse_answer("x [1].", 1), make_chunks(["ITEMAAAA", "ITEMBBBB"]))


def test_a_bracket_beside_another_cites_the_same_claim_and_brackets_of_several_passages_are_found():
    text = (
        "Aspirin lowers the risk of stroke in older adults [1][3]. Statins lower cholesterol in most adults [2]. "
        "Both hold in the elderly too [1, 2], [3]. Warfarin was tested against placebo [2][2]."
    )
    answer = parse_answer(text, 3)
    first = "Aspirin lowers the risk of stroke in older adults."
    assert [(o.chunk_index, o.occurrence, o.claim) for o in answer.occurrences][:2] == [(1, 1, first), (3, 1, first)]
    assert [(b.claim, b.indices, b.members) for b in answer.brackets] == [
        (first, (1, 3), ((1, 1), (3, 1))),
        ("Both hold in the elderly too.", (1, 2, 3), ((1, 2), (2, 2), (3, 2))),
    ]  # [2] alone and [2][2] (one passage) have no joint check
    # The longest claim of a run: a bracket beside another may read only a fragment.
    (bracket,) = parse_answer("According to Smith [1][2], rates rose sharply in the cohort.", 2).brackets
    assert bracket.claim == "rates rose sharply in the cohort."
