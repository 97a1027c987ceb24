"""The offline answer on labeled data (bench/bench_answers.py): SciFact's rationale sentences.

A regression guard, not a timing: the synthesizer must keep quoting the sentences that answer
more often than the per-chunk algorithm it replaced, and far more than lead sentences.
"""

import pytest

from bench.bench_answers import before_60c59af, evidence_for, is_rationale, load, measure


def test_evidence_always_holds_the_cited_abstracts_and_eight_chunks():
    claims, corpus = load()
    from zocrates_gateway.domain.synthesis import content_words

    words = {d: content_words(doc["title"] + " " + " ".join(doc["abstract"])) for d, doc in corpus.items()}
    for claim in claims[:50]:
        chosen = {d["doc_id"] for d in evidence_for(claim, corpus, words)}
        assert {int(d) for d in claim["cited_doc_ids"]} <= chosen and len(chosen) == 8


def test_a_rationale_is_recognised_without_its_reference_markers():
    gold = ["Aspirin lowered the risk of stroke by a third [12, 13]."]
    assert is_rationale("Aspirin lowered the risk of stroke by a third.", gold)
    assert not is_rationale("Aspirin raised the risk of bleeding.", gold)


@pytest.mark.timeout(600)  # 120 real answers: past the default limit when the machine is busy
def test_the_offline_answer_quotes_rationales_more_often_than_before():
    results = measure(limit=120)  # the bench runs all 505; a fifth of them guards the ordering
    now, before, lead = (results[k] for k in ("`choose_points` (now)", "before 60c59af", "lead sentences"))
    assert now["claims"] == 120
    assert now["hit"] > before["hit"] + 0.05 and now["precision"] > before["precision"]
    assert now["first"] >= before["first"] and now["hit"] > 5 * lead["hit"]
    assert now["answered"] > 0.8  # the relevance bar, set on questions, refuses a claim now and then
    assert before_60c59af("unrelated words here", []) == []
