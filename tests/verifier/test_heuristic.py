"""The offline heuristic: the seed's number case, contradictions, compound claims, quality."""

from __future__ import annotations

import math

import pytest

from zocrates_verifier.adapters.backends.base import Pair
from zocrates_verifier.adapters.backends.heuristic import COEFFICIENTS, FEATURES, HeuristicModel, features, score_pair
from zocrates_verifier.domain import calibration

PASSAGE = (
    "We enrolled 2,000 adults in a randomized trial. Over five years, aspirin reduced "
    "the risk of myocardial infarction by 32% compared with placebo (95% CI 21-41%). "
    "Bleeding events were rare."
)
THRESHOLD = 0.60


def test_claim_whose_number_is_not_in_the_passage_scores_low():
    right = score_pair(Pair("Aspirin reduced the risk of myocardial infarction by 32%.", PASSAGE))
    wrong = score_pair(Pair("Aspirin reduced the risk of myocardial infarction by 45%.", PASSAGE))
    assert right >= THRESHOLD
    assert wrong < THRESHOLD
    assert right - wrong > 0.3


def test_rounded_numbers_and_thousands_separators_still_match():
    assert features("The trial enrolled 2000 adults.", PASSAGE)[FEATURES.index("missing_nums")] == 0
    assert features("Risk fell by 32.0 percent.", PASSAGE)[FEATURES.index("missing_nums")] == 0
    assert features("The trial enrolled 3000 adults.", PASSAGE)[FEATURES.index("missing_nums")] == 1


def test_names_with_digits_are_not_numbers():
    assert (
        features("IL-6 and CD4 counts rose in HNF4A carriers.", "IL-6 and CD4 counts rose in HNF4A carriers.")[
            FEATURES.index("missing_nums")
        ]
        == 0
    )


def test_reversed_direction_scores_below_the_supported_claim():
    supported = score_pair(Pair("Aspirin reduced the risk of myocardial infarction.", PASSAGE))
    reversed_ = score_pair(Pair("Aspirin increased the risk of myocardial infarction.", PASSAGE))
    assert features("Aspirin increased the risk of myocardial infarction.", PASSAGE)[FEATURES.index("direction")] == 1
    assert reversed_ < THRESHOLD <= supported


def test_unrelated_claim_scores_low():
    assert score_pair(Pair("Statins cure type 2 diabetes in children.", PASSAGE)) < 0.2


def test_compound_claim_is_judged_on_its_best_clause():
    claim = "Aspirin reduced the risk of myocardial infarction by 32%, while statins cured diabetes in laboratory mice"
    single = score_pair(Pair(claim, PASSAGE, compound=False))
    compound = score_pair(Pair(claim, PASSAGE, compound=True))
    assert compound >= THRESHOLD > single


def test_metric_functions_match_hand_computed_values():
    assert calibration.auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.75
    assert calibration.auroc([0.5, 0.5], [0, 1]) == 0.5
    assert calibration.expected_calibration_error([0.95, 0.95], [1, 1]) == pytest.approx(0.05)


def test_fitting_recovers_a_known_logistic_model():
    import random

    rng = random.Random(3)
    xs = [[rng.uniform(-2, 2)] for _ in range(4000)]
    ys = [int(rng.random() < 1 / (1 + math.exp(-(0.5 + 2.0 * x[0])))) for x in xs]
    b, w = calibration.fit_logistic(xs, ys, l2=0.0)
    assert b == pytest.approx(0.5, abs=0.2) and w == pytest.approx(2.0, abs=0.25)


def test_shipped_coefficients_hold_up_on_held_out_scifact(fixtures_dir):
    data = fixtures_dir / "claims" / "scifact"
    result = calibration.evaluate(COEFFICIENTS, THRESHOLD, data_dir=data)
    held = result["held-out SciFact pairs"]
    assert held["n"] > 150
    assert held["auroc"] > 0.70
    assert held[f"accuracy@{THRESHOLD:.2f}"] > held["base_rate_accuracy"]
    assert held["ece"] < 0.12
    probe = result["number probe (held-out sentences, one number changed)"]
    assert probe[f"accuracy@{THRESHOLD:.2f}"] > 0.95


def test_shipped_coefficients_are_what_the_fit_script_produces(fixtures_dir):
    refit = calibration.refit(fixtures_dir / "claims" / "scifact")
    assert [round(c, 4) for c in refit] == pytest.approx(list(COEFFICIENTS), abs=2e-4)


def test_a_quote_scores_at_least_the_verbatim_floor_and_nothing_is_lowered():
    """The verbatim rule is the heuristic's too: a pair the writer quoted (a table row with its
    caption and headers) and a sentence quoted word for word keep 0.99 at least; the estimator's
    own score stays visible; a pair that is no quote scores as the estimator says."""

    passage = "Table 3. Baseline characteristics.\nage, years | 54.2 ± 8.1\nWomen were a third of the cohort overall."
    row = Pair("Table 3 (Baseline characteristics): age, years — 54.2 ± 8.1", passage, quoted=True)
    sentence = Pair("Women were a third of the cohort overall.", passage)
    unrelated = Pair("Statins lowered cholesterol in most adults.", passage)
    model = HeuristicModel()
    scores = model.predict([row, sentence, unrelated])
    own = [score_pair(p) for p in (row, sentence, unrelated)]
    assert scores[0] >= 0.99 and scores[1] >= 0.99 and scores[2] == own[2] < 0.5
    assert all(s >= o for s, o in zip(scores, own))
    described = model.describe()
    assert described["verbatim_raised"] == sum(o < 0.99 for o in own[:2]) >= 1
    assert HeuristicModel(verbatim_rule=False).predict([row]) == [own[0]]


def test_the_heuristic_says_which_sentences_support_the_claim():
    passage = (
        "Participants were followed for five years.\n"
        "Aspirin reduced the risk of myocardial infarction by 32%. Adverse events were mild."
    )
    found = score_pair(Pair("Aspirin reduced the risk of myocardial infarction by 32%.", passage))
    [(start, end)] = found.spans
    assert passage[start:end] == "Aspirin reduced the risk of myocardial infarction by 32%."
    assert HeuristicModel().predict([Pair("Aspirin reduced infarctions.", passage)])[0].spans == found.spans
