"""Sentence windows: which parts of a passage a claim is scored against, how their verdicts
combine, and the verbatim rule (zocrates_verifier.domain.windows)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zocrates_verifier.domain.windows import (
    Support,
    Window,
    aggregate,
    evidence,
    joint_windows,
    passages,
    quoted_verbatim,
    raise_quotes,
    sentence_spans,
    sentences,
    window_evidence,
    windows,
)

PASSAGE = (
    "We enrolled 412 adults with atrial fibrillation (Smith et al. 2010). "
    "Warfarin lowered the rate of stroke by 64% compared with placebo [12]. "
    "Major bleeding was rare.\n"
    "Table 2 | outcome | rate"
)


def test_sentences_end_at_terminators_and_line_breaks_but_not_after_abbreviations():
    assert sentences(PASSAGE) == [
        "We enrolled 412 adults with atrial fibrillation (Smith et al. 2010).",
        "Warfarin lowered the rate of stroke by 64% compared with placebo [12].",
        "Major bleeding was rare.",
        "Table 2 | outcome | rate",
    ]


def test_the_sentence_sharing_most_words_with_the_claim_is_the_first_window_after_a_short_whole():
    claim = "Warfarin lowered the rate of stroke by 64%."
    found = windows(claim, PASSAGE, whole_fits=True, max_windows=4)
    assert found[0] == Window(PASSAGE, 0, 4)
    assert found[1] == Window(sentences(PASSAGE)[1], 1, 2)
    assert len(found) == 4
    without_whole = windows(claim, PASSAGE, whole_fits=False, max_windows=4)
    assert PASSAGE not in [w.text for w in without_whole] and without_whole[0] == found[1]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text("abcdefgh ", min_size=3, max_size=30).map(str.strip).filter(bool), min_size=1, max_size=12),
    st.integers(1, 10),
)
def test_windows_are_runs_of_up_to_three_sentences_and_never_exceed_the_cap(parts, cap):
    passage = ". ".join(p.capitalize() for p in parts) + "."
    found = windows("abc def", passage, whole_fits=False, max_windows=cap)
    n = len(sentences(passage))
    assert 1 <= len(found) <= cap
    for window in found:
        assert 0 <= window.first < window.last <= n
        assert n == 1 or window.last - window.first <= 3


def test_a_passage_of_one_sentence_is_its_only_window():
    assert windows("a claim", "One sentence with no end", whole_fits=False) == [
        Window("One sentence with no end", 0, 1)
    ]


def test_the_pair_answers_with_its_best_supporting_window():
    quote, other, whole = Window("q", 1, 2), Window("o", 3, 4), Window("w", 0, 5)
    scored = [(whole, (0.30, 0.40, 0.30)), (quote, (0.88, 0.09, 0.03)), (other, (0.05, 0.80, 0.15))]
    assert aggregate(scored) == (0.88, 0.09, 0.03)
    assert aggregate([(other, (0.05, 0.80, 0.15)), (whole, (0.10, 0.10, 0.80))]) == (0.10, 0.10, 0.80)


@pytest.mark.parametrize(
    "claim",
    [
        "Warfarin lowered the rate of stroke by 64% compared with placebo.",
        "warfarin LOWERED the rate of stroke by 64 % compared with placebo",
        "We enrolled 412 adults with atrial fibrillation (Smith et al. 2010)",
    ],
)
def test_a_claim_found_word_for_word_in_its_passage_is_quoted(claim):
    assert quoted_verbatim(claim, PASSAGE)


def test_line_end_hyphens_are_joined_before_comparing():
    assert quoted_verbatim(
        "the rate of stroke fell in treated patients", "the rate of stroke fell in treat-\ned patients"
    )


@pytest.mark.parametrize(
    "claim",
    [
        "Warfarin lowered the rate of stroke by 46% compared with placebo.",  # a changed number
        "Warfarin raised the rate of stroke by 64% compared with placebo.",  # a changed word
        "Major bleeding was rare.",  # too short to be more than a fragment
        "lowered the rate of stroke by 64% compared with placebo 12",  # the marker is not text
    ],
)
def test_a_changed_short_or_marker_bearing_claim_is_not_quoted(claim):
    assert not quoted_verbatim(claim, PASSAGE)


@pytest.mark.parametrize(
    ("claim", "passage"),
    [
        ("all trials of the drug reduced mortality", "Not all trials of the drug reduced mortality."),
        ("the drug reduced mortality in older adults", "We tested whether the drug reduced mortality in older adults."),
        ("We enrolled 412 adults with atrial", PASSAGE),  # part of a sentence
    ],
)
def test_words_inside_a_sentence_that_asserts_something_else_are_not_a_quote(claim, passage):
    assert not quoted_verbatim(claim, passage)


def test_a_quote_may_span_consecutive_sentences():
    claim = "Warfarin lowered the rate of stroke by 64% compared with placebo. Major bleeding was rare."
    assert quoted_verbatim(claim, PASSAGE)


# --- where the passage supports the claim ----------------------------------------------------

TABLE = (
    "Table 2: Outcomes at one year.\r\n"
    "| arm | stroke | bleeding |\n"
    "| warfarin | 1.2% | 3.1% |\n"
    "  The anticoagu-\n"
    "lant lowered strokes.  Bleeding was rare.\n\n"
    "Bleeding was rare.\u2028Follow-up was complete."
)


def test_sentence_spans_are_exact_offsets_of_each_sentence_even_across_rows_hyphens_and_repeats():
    spans = sentence_spans(TABLE)
    assert (
        [TABLE[a:b] for a, b in spans]
        == sentences(TABLE)
        == [
            "Table 2: Outcomes at one year.",
            "| arm | stroke | bleeding |",
            "| warfarin | 1.2% | 3.1% |",
            "The anticoagu-",
            "lant lowered strokes.",
            "Bleeding was rare.",
            "Bleeding was rare.",
            "Follow-up was complete.",
        ]
    )
    assert spans[5] != spans[6]  # the repeated sentence is found at each of its places
    assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="ab .!?\n\r-|\u2028", max_size=80))
def test_every_sentence_span_holds_exactly_its_sentence(text):
    assert [text[a:b] for a, b in sentence_spans(text)] == sentences(text)


def test_the_evidence_of_a_window_runs_from_its_first_to_its_last_sentence_in_the_passage():
    claim = "The anticoagulant lowered strokes."
    found = window_evidence(claim, TABLE, Window("The anticoagu- lant lowered strokes.", 3, 5))
    [(start, end)] = found
    assert TABLE[start:end] == "The anticoagu-\nlant lowered strokes."


def test_the_whole_passage_narrows_to_the_sentences_that_share_words_with_the_claim():
    claim = "Warfarin cut strokes by 64% versus placebo."
    [(start, end)] = window_evidence(claim, PASSAGE, windows(claim, PASSAGE, whole_fits=True)[0])
    assert PASSAGE[start:end] == "Warfarin lowered the rate of stroke by 64% compared with placebo [12]."
    assert evidence(claim, PASSAGE, []) == ()


def test_a_raised_quote_keeps_where_the_model_found_it():
    claim = "Warfarin lowered the rate of stroke by 64% compared with placebo."
    pairs = [type("P", (), {"claim": claim, "source_text": PASSAGE, "quoted": False})()]
    support = [Support(0.3, ((69, 139),))]
    raise_quotes(pairs, support)
    assert support[0] == 0.99 and support[0].spans == ((69, 139),)


JOINED = [
    "Aspirin cut the rate of stroke by a third. The trial enrolled 900 adults. Follow-up lasted five years. "
    "Most patients were over sixty. Adherence was high throughout.",
    "Bleeding rose among older adults. Nothing else changed. The dose was 100 mg daily.",
    "Costs were low.",
]


def joint_text(parts: list[str]) -> tuple[str, list[int]]:
    starts, offset = [], 0
    for part in parts:
        starts.append(offset)
        offset += len(part) + 2
    return "\n\n".join(parts), starts


@pytest.mark.parametrize("whole_fits", [False, True])
@pytest.mark.parametrize("max_chars", [60, 300, 5_000])
def test_every_window_of_a_joint_pair_holds_text_of_every_passage(whole_fits, max_chars):
    text, starts = joint_text(JOINED)
    claim = "Aspirin cut strokes but bleeding rose among older adults, at low cost."
    found = joint_windows(claim, text, starts, whole_fits=whole_fits, max_chars=max_chars, max_windows=4)
    assert 1 <= len(found) <= 4 and (found[0].text == text) == whole_fits
    for window in found:
        pieces = window.text.split("\n\n")
        assert len(pieces) == len(JOINED) and all(piece in part for piece, part in zip(pieces, JOINED))
        assert all(piece.strip() for piece in pieces)
        if window.text != text:
            assert all(len(piece) <= (max_chars - 4) // 3 for piece in pieces)  # an equal share each
        assert (window.first, window.last) == (0, 0)  # no run of sentences: no evidence spans
    if max_chars >= 300:  # each passage's best window for the claim, whole, in the first joined one
        assert "Bleeding rose among older adults." in found[int(whole_fits)].text
    assert passages(text, starts) == JOINED
