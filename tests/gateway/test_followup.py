"""Follow-up questions remember the session: offline by their words, with a model by a rewrite."""

from __future__ import annotations

import pytest

from harness.evidence import evidence_chunk, scored
from harness.llm import LoopbackModel
from harness.serving import serving
from harness.system import running_system
from zocrates_contracts import Citation, References, SourceRef, TurnRecord
from zocrates_gateway.domain.followup import (
    carried_terms,
    clean_query,
    history_messages,
    points_back,
    resolve_follow_up,
)
from zocrates_gateway.turn import READ_AS_FOLLOW_UP, offline_answer

FIRST = "What was the somatic mutation rate estimated from twins?"


def previous(question: str = FIRST, cited=("ITEMAAAA",), **fields) -> TurnRecord:
    refs = References(cited=[SourceRef(item_key=k, library_id="user") for k in cited])
    return TurnRecord(turn_id="t1", session_id="s", intent="library", question=question, references=refs, **fields)


@pytest.mark.parametrize(
    "question",
    [
        "What sample size did they use?",
        "How were their participants recruited?",
        "Did this study report any limitations?",
        "What did these patients receive?",
        "And in children?",
        "What about the bleeding risk?",
        "How many?",
        "Why?",
        "Was it significant?",
        "How many of those were women?",
        "Which of these had side effects?",
        "What side effects did it observe?",
        "How many were taken?",
        "How much did it cost?",
        # only a question word and what it asks for: of what was being discussed
        "At what temperature?",
        "At what pH?",
        "In which year?",
        "In which cell line?",
        "What dose?",
    ],
)
def test_a_question_that_points_back_is_a_follow_up(question):
    assert points_back(question)


@pytest.mark.parametrize(
    "question",
    [
        "What is the failed retrieval rate of IVC filters in trauma patients?",
        "Which angiotensin-converting enzyme inhibitor was crystallised with the N-domain?",
        "How do attention functions map queries to outputs?",
        "What did Datta et al. calculate for heparin-induced thrombocytopenia?",
        "Is it true that aspirin prevents colorectal cancer in adults?",
        "On a different subject: what did they find about attention functions?",
        "New question: how were their queries mapped to outputs?",
        "What is RXP407?",
        "In which year was Paper Plain published?",
        "What causes deep venous thrombosis?",
        "In what way did participants use the key question index?",
    ],
)
def test_a_question_that_names_its_own_topic_starts_afresh(question):
    assert not points_back(question)
    assert resolve_follow_up(question, previous()) is None


def test_a_follow_up_carries_the_previous_question_and_boosts_its_cited_items():
    follow = resolve_follow_up("What sample size did they use?", previous(cited=("ITEMAAAA", "ITEMBBBB")))
    assert follow is not None and not follow.restricted
    assert follow.query.startswith("What sample size did they use? ")
    assert {"somatic", "mutation", "twins"} <= set(follow.query.split())
    assert [i.item_key for i in follow.scope().items] == ["ITEMAAAA", "ITEMBBBB"]


def test_a_follow_up_remembers_the_passages_the_previous_answer_cited_and_kept():
    def cited(n: int, survives: bool) -> Citation:
        return Citation(index=n, chunk_id=f"chunk-{n}", item_key="ITEMAAAA", quote="...", survives=survives)

    follow = resolve_follow_up("How many were taken?", previous(citations=[cited(1, True), cited(2, False)]))
    assert follow.cited_before == {"chunk-1"}  # a citation that did not survive is no lead
    assert resolve_follow_up("How many were taken?", previous()).cited_before == frozenset()


def test_an_ellipsis_wants_the_kind_of_answer_the_previous_question_wanted():
    """ "And for mechanical compression devices?" after "What bleeding risk did the review
    calculate for LMWH?" asks for a value, as the first question did; the offline writer quoted
    a sentence of no value ("should not be used as an initial choice") first."""
    first = "What bleeding risk did the trauma DVT review calculate for LMWH?"
    follow = resolve_follow_up("And for mechanical compression devices?", previous(first))
    assert follow.asked == first
    assert resolve_follow_up("And how were they split by gender?", previous(first)).asked == ""  # its own question
    assert resolve_follow_up("How many were taken?", previous(first)).asked == ""
    evidence = [
        evidence_chunk(
            1,
            "Mechanical compression device DVT prophylaxis should not be used as an initial choice in trauma "
            "patients, but when LMWH is contraindicated. Although the mechanism is unclear, the calculated risk "
            "of bleeding with mechanical devices is 2.6%.",
            "Conclusion",
        )
    ]
    answer = offline_answer(follow.query.split("?")[0] + "?", scored(follow.query, evidence), follow)
    assert answer.points and "2.6%" in answer.points[0].text


def test_an_ellipsis_is_not_answered_with_what_the_previous_answer_quoted():
    """ "And with both residues swapped?" after the Y369F mutant's loss of affinity asks about
    another mutant: the offline writer quoted the Y369F sentence again, as the first point."""
    first = "How much did the Y369F mutation reduce 33RE's binding affinity?"
    y369f = "A 36-fold decrease in binding affinity was observed for Y369F."
    said = f"Here is what your library says:\n\n- {y369f} Thus, Tyr369 appears to be the major residue [1].\n"
    evidence = [
        evidence_chunk(
            1,
            f"{y369f} Thus, Tyr369 appears to be the major residue. The additive effect observed in YR/FE "
            "constituted a 250-fold decrease in 33RE-binding affinity compared with wild-type.",
            "Discussion",
        )
    ]
    follow = resolve_follow_up("And with both residues swapped?", previous(first, prose=said))
    assert follow.said == f"Here is what your library says: - {y369f} Thus, Tyr369 appears to be the major residue."
    answer = offline_answer("And with both residues swapped?", scored(follow.query, evidence), follow)
    assert answer.points and "250-fold" in answer.points[0].text
    assert not any("36-fold" in p.text for p in answer.points)
    # and for any follow-up that turns to something else, with a question of its own or not; one
    # that goes on about the same may be answered by what was quoted before ("how do those
    # compare with what was reported before?")
    turned = resolve_follow_up(
        "What about the double mutant: how much weaker did it bind?", previous(first, prose=said)
    )
    assert turned.said == follow.said
    assert resolve_follow_up("How many were swapped?", previous(first, prose=said)).said == ""


def test_an_ellipsis_is_answered_by_what_the_previous_answer_quoted_about_it():
    """ "And for mechanical compression devices?" after "What bleeding risk did the DVT review
    calculate for LMWH?", whose answer had quoted the devices' rate beside heparin's: refused, as
    every sentence holding a rate had been said."""
    first = "What bleeding risk did the DVT review calculate for LMWH?"
    lmwh = "In this review we calculated the risk of bleeding and HIT to be 3.9% and 0.7% respectively."
    devices = (
        "Although the mechanism that predisposes patients to bleeding while using mechanical devices is unclear, "
        "the calculated risk of bleeding is 2.6%."
    )
    said = f"Here is what your library says:\n\n- {lmwh} [1]\n- {devices} [1]\n"
    evidence = [
        evidence_chunk(1, f"{lmwh} {devices}", "Conclusion"),
        evidence_chunk(2, "DVT prophylaxis with LMWH is recommended for trauma patients.", "Introduction"),
    ]
    follow = resolve_follow_up("And for mechanical compression devices?", previous(first, prose=said))
    answer = offline_answer("And for mechanical compression devices?", scored(follow.query, evidence), follow)
    assert [p.text for p in answer.points] == [devices]


def test_naming_the_paper_restricts_the_search_to_it_and_a_bare_question_borrows_the_terms():
    assert resolve_follow_up("What limitations did this paper report?", previous()).restricted
    bare = resolve_follow_up("How many?", previous())
    assert not bare.restricted and "twins" in bare.query


def test_nothing_to_follow_after_a_failed_or_non_library_turn_or_none():
    assert resolve_follow_up("What about them?", None) is None
    assert resolve_follow_up("What about them?", previous(error={"code": "timeout", "message": "x"})) is None
    chat = TurnRecord(turn_id="t", session_id="s", intent="chat", question="hello")
    assert resolve_follow_up("And them?", chat) is None


def test_a_question_that_found_nothing_alone_is_read_as_a_follow_up_unless_the_topic_changes():
    follow = resolve_follow_up("What would guessing have scored?", previous(), forced=True)
    assert follow is not None and "twins" in follow.query and follow.context.split()[0] == "somatic"
    assert resolve_follow_up("On another topic: what would guessing have scored?", previous(), forced=True) is None


def test_carried_terms_skip_what_the_new_question_repeats_and_citation_tokens():
    assert carried_terms("Which twins [2] had somatic mutations?", "And the mutations in twins?") == ["somatic"]


def test_a_rewritten_query_is_one_clean_line():
    assert clean_query('"Somatic mutation rate in twins [1] sample size"\nBecause...', "x") == (
        "Somatic mutation rate in twins sample size"
    )
    assert clean_query("  \n", "the fallback") == "the fallback"


def test_history_is_the_remembered_view_newest_first_within_the_budget():
    turns = [
        previous("first?", coordinator_view="Old answer (Smith, 2020)." + "x" * 50),
        previous("second?", prose="Twins mutate [1]."),  # stored before coordinator views
        previous("third?", coordinator_view="New answer (Jonsson, 2021)."),
    ]
    messages = history_messages(turns, budget=80)
    assert [m["content"] for m in messages] == ["second?", "Twins mutate .", "third?", "New answer (Jonsson, 2021)."]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


@pytest.mark.connected
async def test_offline_a_follow_up_searches_the_previous_items_first_and_the_library_too(nats_server):
    async with running_system(nats_server.url) as system:
        first = (await system.chat(FIRST))[-1]["data"]
        assert first["coordinator_view"] and "[1]" not in first["coordinator_view"]
        assert "Jonsson" in first["coordinator_view"]
        before = len(system.retrieval.requests)
        events = await system.chat("How many pairs did they sequence?", session_id=first["session_id"])
        done = events[-1]["data"]
        assert events[-1]["event"] == "done"
        requests = system.retrieval.requests[before:]
        scoped = [r for r in requests if r.scope is not None]
        assert len(requests) == 2 and len(scoped) == 1
        assert [i.item_key for i in scoped[0].scope.items] == [r["item_key"] for r in first["references"]["cited"]]
        assert all("somatic" in r.query and "twins" in r.query for r in requests)
        assert "387 pairs" in done["prose"]
        # A new topic in the same session is searched afresh.
        before = len(system.retrieval.requests)
        await system.chat("How do attention functions map queries to outputs?", session_id=first["session_id"])
        [fresh] = system.retrieval.requests[before:]
        assert fresh.scope is None and fresh.query == "How do attention functions map queries to outputs?"


@pytest.mark.connected
async def test_offline_a_question_nothing_answers_alone_is_asked_again_as_a_follow_up(nats_server):
    async with running_system(nats_server.url) as system:
        first = (await system.chat(FIRST))[-1]["data"]
        before = len(system.retrieval.requests)
        done = (await system.chat("What would guessing have scored?", session_id=first["session_id"]))[-1]["data"]
        alone, *again = system.retrieval.requests[before:]
        assert alone.scope is None and alone.query == "What would guessing have scored?"
        # again as a follow-up: the previous turn's items first, and the library
        assert [[i.item_key for i in r.scope.items] if r.scope else None for r in again] == [["ITEMAAAA"], None]
        assert all("somatic" in r.query for r in again)
        assert READ_AS_FOLLOW_UP in done["prose"]
        # Saying the topic changes keeps it alone.
        before = len(system.retrieval.requests)
        asked = "On a different subject: what would guessing have scored?"
        done = (await system.chat(asked, session_id=first["session_id"]))[-1]["data"]
        [alone] = system.retrieval.requests[before:]
        assert alone.scope is None and READ_AS_FOLLOW_UP not in done["prose"]


@pytest.mark.connected
async def test_offline_who_wrote_it_is_answered_from_the_record_of_the_paper_just_cited(nats_server):
    async with running_system(nats_server.url) as system:
        first = (await system.chat(FIRST))[-1]["data"]
        done = (await system.chat("Who wrote it?", session_id=first["session_id"]))[-1]["data"]
        assert "Jonsson" in done["prose"].split("[1]")[1]  # by ..., after the record's citation
        assert [c["kind"] for c in done["citations"]] == ["record"]
        assert {c["item_key"] for c in done["citations"]} == {r["item_key"] for r in first["references"]["cited"]}


@pytest.mark.connected
async def test_with_a_model_a_follow_up_is_rewritten_and_answered_with_the_remembered_turns(nats_server):
    model = LoopbackModel(["The rate was estimated from 387 twin pairs [1]."])
    async with serving(model.app) as llm, running_system(nats_server.url, llm_url=f"{llm}/v1") as system:
        first = (await system.chat(FIRST))[-1]["data"]
        before = len(system.retrieval.requests)
        # The second turn's first call to the model is the rewrite, its second the answer.
        model.replies = [['"somatic mutation rate twins [2] sample size"\n'], ["They sequenced 387 pairs [1]."]]
        second_events = await system.chat("What sample size did they use?", session_id=first["session_id"])
        assert second_events[-1]["event"] == "done"
        [query] = [r.query for r in system.retrieval.requests[before:]]
        assert query == "somatic mutation rate twins sample size"
        rewrite, answer = model.answer_requests[1:]
        assert rewrite["messages"][0]["content"].startswith("You rewrite a researcher's follow-up question")
        assert rewrite["messages"][-1]["content"].startswith("Follow-up question: What sample size did they use?")
        history = answer["messages"][1:-1]
        assert history == [
            {"role": "user", "content": FIRST},
            {"role": "assistant", "content": first["coordinator_view"]},
        ]
        assert "[1]" not in history[1]["content"] and "(" in history[1]["content"]
