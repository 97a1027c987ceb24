"""The reversed and negated contradictions a training option builds (`--contrast`) turn exactly one thing:
the direction of an effect, or whether it holds."""

from __future__ import annotations

import pytest

from tools import train_verifier
from tools.verifier_contrast import contrast_probe_rows, contrast_rows, negate, reverse


@pytest.mark.parametrize(
    ("text", "reversed_"),
    [
        ("Daily aspirin lowers the risk of stroke.", "Daily aspirin raises the risk of stroke."),
        ("Metformin reduces HbA1c levels.", "Metformin increases HbA1c levels."),
        ("LRBA promotes CTLA-4 recycling.", "LRBA suppresses CTLA-4 recycling."),
        ("Higher doses were better tolerated.", "Lower doses were better tolerated."),
        ("Aspirin has been shown to lower risk.", "Aspirin has been shown to raise risk."),
        ("A man is playing a guitar.", None),
        ("Obesity does not increase mortality.", None),  # "does not decrease" is no contradiction
    ],
)
def test_reverse_swaps_the_first_direction_word(text, reversed_):
    assert reverse(text) == reversed_


@pytest.mark.parametrize(
    ("text", "negated"),
    [
        ("Metformin reduces HbA1c levels.", "Metformin does not reduce HbA1c levels."),
        ("Metformin reduced HbA1c levels.", "Metformin did not reduce HbA1c levels."),
        ("A man is playing a guitar.", "A man is not playing a guitar."),
        ("RAD52 is involved in DNA replication.", "RAD52 is not involved in DNA replication."),
        ("Metformin did not reduce HbA1c.", "Metformin did reduce HbA1c."),
        ("The drug cannot cross the barrier.", "The drug can cross the barrier."),
        ("Obesity doesn't increase mortality.", "Obesity does increase mortality."),
        ("Statins had no effect on stroke.", "Statins had an effect on stroke."),
        ("There were no differences in mortality.", "There were differences in mortality."),
        ("Patients who are obese have a higher risk.", "Patients who are obese do not have a higher risk."),
        ("Aspirin has been shown to work.", "Aspirin has not been shown to work."),
        ("Studies show that aspirin is effective.", None),  # only a side clause's verb: left alone
        ("It was never replicated.", None),  # a negation no rule removes: not doubled
    ],
)
def test_negate_removes_a_negation_or_adds_one_to_the_main_verb(text, negated):
    assert negate(text) == negated


def test_contrast_rows_turn_supported_pairs_into_contradictions_of_the_same_group():
    rows = [
        {"claim": "Metformin reduces HbA1c.", "passage": "Metformin lowered HbA1c by 1%.", "label": "support"},
        {"claim": "Metformin reduces HbA1c.", "passage": "Metformin is cheap.", "label": "neither"},
        {"claim": "A dog runs.", "passage": "A dog is running in a long field of grass.", "label": "support"},
    ]
    rows = [r | {"source": "s", "group": f"g{i}"} for i, r in enumerate(rows)]
    made = contrast_rows(rows)
    assert {r["label"] for r in made} == {"contradict"}
    assert {r["group"] for r in made} == {"g0", "g2"}, "only supported pairs are turned"
    assert {"claim": "A dog runs.", "passage": "A dog is not running in a long field of grass."}.items() <= next(
        r for r in made if r["source"] == "s+negated_passage" and r["group"] == "g2"
    ).items()
    claims = {r["claim"] for r in made if r["group"] == "g0" and r["source"].endswith("_claim")}
    assert claims == {"Metformin increases HbA1c.", "Metformin does not reduce HbA1c."}

    originals, turned = contrast_probe_rows(rows)
    assert [o["claim"] for o in originals] == ["Metformin reduces HbA1c.", "A dog runs."]
    assert all(originals[t["original"]]["label"] == "support" for t in turned)
    assert len(turned) == 4  # both rules for the first claim (the second has no word they turn), both passages


def test_with_contrast_the_second_stage_holds_scifact_contrasts_and_as_many_from_other_sources():
    train = train_verifier.load_splits()["train"]
    rows = train_verifier.domain_rows(train, seed=0, contrast=True)
    turned = [r for r in rows if r["source"].endswith(("_claim", "_passage"))]
    scifact = [r for r in turned if r["source"].startswith("scifact_train+")]
    assert len(scifact) > 300 and abs(len(turned) - 2 * len(scifact)) <= 2
    assert {r["label"] for r in turned} == {"contradict"}
    groups = {r["group"] for r in train}
    assert {r["group"] for r in rows} <= groups, "every row comes from the train split"
    assert len({sum(r["label"] == label for r in rows) for label in train_verifier.LABELS}) == 1, "labels even"
    plain = train_verifier.domain_rows(train, seed=0)
    assert not any(r["source"].endswith(("_claim", "_passage")) for r in plain), "off by default"
    assert len(rows) - len(plain) > len(turned), "the contrasts, and the other sources' pairs they came from"
