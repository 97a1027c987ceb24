"""The number rule: a claim stating a number its passage does not print is not supported by it."""

from __future__ import annotations

import pytest

from zocrates_verifier.adapters.backends import build_backend, local_torch
from zocrates_verifier.adapters.backends.base import Pair
from zocrates_verifier.adapters.backends.heuristic import HeuristicModel, score_pair
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.domain import windows
from zocrates_verifier.domain.numbers import (
    UNPRINTED_NUMBER_SUPPORT,
    cap_unprinted_numbers,
    stated_numbers,
    unprinted_numbers,
)
from zocrates_verifier.domain.rules import ScoreRules

PASSAGE = (
    "We enrolled 2,000 adults in four hospitals. Over five years, aspirin reduced the risk of "
    "myocardial infarction by 32.4% compared with placebo (Table 2). Bleeding events were rare."
)


@pytest.mark.parametrize(
    ("claim", "stated"),
    [
        ("Aspirin reduced the risk by 32% in 2,000 adults.", ["32", "2000"]),
        ("A dose of 40mg/day and .5 mg of B12.", ["40", ".5"]),
        ("Germany is the 2nd most populous; the 1950s and 2019's survey.", []),
        ("As Table 3 and Fig. 2 show in phase 3 of type 2 diabetes, section 4.1 says so.", []),
        ("IL-6, CD4 and COVID-19 were measured.", []),
        # a language model's author-year citations: the item's year, not a value of the claim
        ("Datta et al. (2010) found 3.9% (Smith 2009; Jones 2012a); Li et al. 2011 agreed.", ["3.9"]),
        ("Twitter was created in 2010 (n = 120).", ["2010", "120"]),
        # conventions, not findings; a p value stated exactly is a finding
        ("Risk fell by 32% (95% CI 21-41%, p < 0.05; p = 0.003).", ["32", "21", "41", "0.003"]),
    ],
)
def test_the_numbers_a_claim_states(claim, stated):
    assert stated_numbers(claim) == stated


def test_a_number_is_printed_when_the_passage_holds_it_rounded_or_spelled():
    assert unprinted_numbers("Aspirin cut the risk by 32% in 2000 adults at 4 hospitals.", PASSAGE) == []
    assert unprinted_numbers("Aspirin cut the risk by 32.4% over 5 years.", PASSAGE) == []
    assert unprinted_numbers("Aspirin cut the risk by 42% in 2,500 adults.", PASSAGE) == ["42", "2500"]
    assert unprinted_numbers("Aspirin cut the risk by 33%.", PASSAGE) == ["33"]


def test_the_rule_caps_a_changed_number_and_keeps_the_rest():
    right = Pair("Aspirin reduced the risk of myocardial infarction by 32%.", PASSAGE)
    wrong = Pair("Aspirin reduced the risk of myocardial infarction by 23%.", PASSAGE)
    low = Pair("Aspirin prevented 7 strokes.", PASSAGE)
    spans = ((0, 10),)
    support = [windows.Support(0.9, spans), windows.Support(0.9, spans), 0.1]
    capped = cap_unprinted_numbers([right, wrong, low], support)
    assert capped == [(1, 0.9, ["23"])]
    assert support == [0.9, UNPRINTED_NUMBER_SUPPORT, 0.1]
    assert windows.spans_of(support[1]) == spans  # where the passage supports the rest stays shown
    # the numbers are named whether the rule capped the score or the model had scored it lower
    assert [windows.unprinted_of(s) for s in support] == [(), ("23",), ("7",)]


def test_a_pair_score_names_the_numbers_its_passage_does_not_print():
    from zocrates_contracts.messages import VerificationPair
    from zocrates_verifier.service import pair_score

    wrong = Pair("Aspirin cut the risk by 23% in 2,500 adults.", PASSAGE)
    support = [windows.Support(0.9, ((0, 10),))]
    cap_unprinted_numbers([wrong], support)
    sent = VerificationPair(chunk_index=2, occurrence=1, claim=wrong.claim, source_text=PASSAGE)
    score = pair_score(sent, support[0])
    assert (score.probability, score.unprinted_numbers) == (UNPRINTED_NUMBER_SUPPORT, ["23", "2500"])
    assert pair_score(sent, 0.9).unprinted_numbers == []  # a backend that does not apply the rule


def test_a_compound_claim_is_capped_only_when_every_part_states_an_unprinted_number():
    # The parts of "[1, 2]" may each cite another passage: one part this passage prints is enough.
    one_part = Pair(
        "Aspirin reduced the risk by 32% over five years, and statins lowered LDL by 40%", PASSAGE, compound=True
    )
    no_part = Pair(
        "Aspirin reduced the risk by 12% over five years, and statins lowered LDL by 40%", PASSAGE, compound=True
    )
    support = [0.8, 0.8]
    assert [i for i, _, _ in cap_unprinted_numbers([one_part, no_part], support)] == [1]


def test_the_number_rule_leaves_quotes_to_the_verbatim_rule_and_both_count():
    """A quote always ends at the verbatim score, and /health shows the model's own score of it;
    a changed number is capped; /health counts both. With the verbatim rule off, a quote is a
    claim like any other."""
    passage = "Table 3. Baseline characteristics.\nage, years | 54.2 ± 8.1\nWomen were a third of the cohort."
    # a rendering the writer sent `quoted` whose number the passage does not print as such
    row = Pair("Table 3 (Baseline characteristics): age, years — 55 ± 8.1", passage, quoted=True)
    changed = Pair("The mean age of the cohort was 45.2 years.", passage)
    rules = ScoreRules()
    support = [0.5, 0.8]
    rules.apply([row, changed], support)
    assert support == [windows.VERBATIM_SUPPORT, UNPRINTED_NUMBER_SUPPORT]
    assert rules.describe() == {
        "verbatim_rule": True,
        "verbatim_raised": 1,
        "last_verbatim_model_score": 0.5,
        "number_rule": True,
        "number_capped": 1,
    }
    numbers_only = ScoreRules(verbatim=False)
    support = [0.5, 0.8]
    numbers_only.apply([row, changed], support)
    assert support == [UNPRINTED_NUMBER_SUPPORT] * 2 and numbers_only.number_capped == 2
    off = ScoreRules(numbers=False)
    support = [0.5, 0.8]
    off.apply([row, changed], support)
    assert support == [windows.VERBATIM_SUPPORT, 0.8] and off.number_capped == 0


def test_the_heuristic_applies_the_number_rule_unless_it_is_off():
    claim = Pair("Aspirin reduced the risk of myocardial infarction by 23% compared with placebo.", PASSAGE)
    own = score_pair(claim)
    assert own > UNPRINTED_NUMBER_SUPPORT  # the estimator alone does not go that low
    assert HeuristicModel().predict([claim]) == [UNPRINTED_NUMBER_SUPPORT]
    assert HeuristicModel(number_rule=False).predict([claim]) == [own]


def test_the_setting_turns_the_rule_off(monkeypatch):
    monkeypatch.setenv("ZOCRATES_VERIFIER_NUMBER_RULE", "false")
    backend = build_backend(VerifierSettings(), "heuristic", "cpu")
    assert backend.health()["number_rule"] is False


def test_the_shipped_model_does_not_keep_a_changed_number():
    """The model alone lets some changed numbers through its threshold (the number probe); served,
    it never keeps one."""
    if not local_torch.shipped_model_present():
        pytest.skip("no trained model in this checkout")
    passage = (
        "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively. "
        "These values are slightly higher than the previously published rates."
    )
    claims = [
        "The review calculated the risk of bleeding to be 3.9%.",
        "The review calculated the risk of bleeding to be 5.9%.",
        "The review calculated the risk of HIT to be 0.4%.",
    ]
    served = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR)
    served.setup("cpu")
    right, *changed = served.predict([Pair(c, passage) for c in claims])
    assert max(changed) <= UNPRINTED_NUMBER_SUPPORT < right
    assert served.describe()["number_capped"] == sum(c == UNPRINTED_NUMBER_SUPPORT for c in changed)
