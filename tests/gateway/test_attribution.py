"""Sentence-level attribution (`POST /citations/sentence_attribution`, seed 4.5 item 10): the
cited passage in numbered spans, the ones that support an occurrence's claim and the facts none
states; judged by the real verifier per span offline, or by the attribution role's model (a real
OpenAI-compatible server on loopback); kept with the turn and returned on reload."""

from __future__ import annotations

import asyncio
import json

import pytest

from harness.llm import LoopbackModel
from harness.serving import serving
from harness.system import running_system
from zocrates_citations import segment_source_text
from zocrates_contracts import CitationOccurrence, TextSpan
from zocrates_gateway.domain.attribution import (
    BadModelAnswer,
    ModelAnswer,
    attribution_messages,
    read_model_answer,
    supporting_offline,
    unsupported_facts,
)

QUESTION = "What was the somatic mutation rate estimated from twins?"
# [1]'s passage (tests/harness/system.py CHUNKS) has two sentences: the first holds the claim but
# for its number; [2] is cited by a claim its passage supports.
CLAIM = "The somatic mutation rate was estimated by whole-genome sequencing of 412 pairs of monozygotic twins"
ANSWER = [f"{CLAIM} [1]. ", "An attention function maps a query and key-value pairs to an output [2]."]
PASSAGE = (
    "## Results\n"
    "The rate was estimated from 387 twin pairs. Early embryonic mutations were common.\n\n"
    "| cohort | pairs |\n| --- | --- |\n| Iceland | 387 |\n| Denmark | 120 |\n\n"
    "$$\nr = 0.5\n$$"
)


def test_the_passage_is_numbered_with_its_heading_table_rows_and_display_math_whole():
    spans = segment_source_text(PASSAGE)
    assert [(s.index, s.kind) for s in spans] == [
        (1, "heading"),
        (2, "sentence"),
        (3, "sentence"),
        (4, "table_row"),
        (5, "table_row"),
        (6, "table_row"),
        (7, "math"),
    ]
    user = attribution_messages("Iceland had 387 pairs.", spans)[1]["content"]
    assert "[5] | Iceland | 387 |" in user and user.startswith("Claim: Iceland had 387 pairs.")


def test_offline_the_spans_at_the_threshold_support_else_those_under_the_verifier_window():
    spans = segment_source_text(PASSAGE)
    occurrence = CitationOccurrence(occurrence=1, claim="x", verdict="KEPT", spans=[TextSpan(start=11, end=40)])
    assert supporting_offline(spans, {2: 0.7, 3: 0.2, 5: 0.61}, 0.6, occurrence) == [2, 5]
    # None reaches it (a claim that joins sentences): the spans the passage's best window covers.
    assert supporting_offline(spans, {2: 0.4, 3: 0.2}, 0.6, occurrence) == [2]
    # No window either (a demoted claim): the closest span; the unsupported facts say what it lacks.
    demoted = occurrence.model_copy(update={"spans": [], "verdict": "DEMOTED"})
    assert supporting_offline(spans, {2: 0.1, 3: 0.3, 4: None}, 0.6, demoted) == [3]
    assert supporting_offline(spans, {2: 0.0}, 0.6, demoted) == supporting_offline(spans, {}, 0.6, demoted) == []


def test_unsupported_facts_are_the_claim_s_words_and_numbers_no_supporting_span_holds():
    supporting = ["The rate was estimated from 387 twin pairs."]
    assert unsupported_facts("The rates were estimated from 412 twin pairs in Iceland.", supporting) == [
        "412",
        "Iceland",
    ]
    assert unsupported_facts("Rates of 387 pairs", supporting) == []
    assert unsupported_facts("A rate of 12.5% was seen", ["a rate of 12.5 percent"]) == ["seen"]


def test_a_model_answer_is_cleaned_and_one_naming_a_sentence_the_passage_lacks_is_refused():
    answer = ModelAnswer(supporting=[3, 2, 3], unsupported_facts=["  412  pairs", "412 pairs", " "], explanation=" ok ")
    assert read_model_answer(answer, 7) == ModelAnswer(
        supporting=[2, 3], unsupported_facts=["412 pairs"], explanation="ok"
    )
    with pytest.raises(BadModelAnswer, match=r"\[8\]"):
        read_model_answer(ModelAnswer(supporting=[1, 8]), 7)


def real_verifier():
    from zocrates_verifier.config import VerifierSettings
    from zocrates_verifier.service import VerifierService

    return VerifierService(VerifierSettings(provider="heuristic"))


async def ask(system, done: dict, headers=None, **fields):
    body = {"session_id": done["session_id"], "turn_id": done["turn_id"], "citation_index": 1, "occurrence": 1}
    return await system.client.post(
        f"{system.url}/citations/sentence_attribution", json=body | fields, headers=headers or system.auth
    )


async def stored_turn(system, done: dict) -> dict:
    response = await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)
    return response.json()["turns"][0]


@pytest.mark.connected
async def test_offline_the_verifier_scores_each_sentence_and_the_result_is_kept_with_the_turn(nats_server):
    model = LoopbackModel(ANSWER)
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, verifier=real_verifier(), llm_synthesizer_url=f"{llm}/v1") as system,
    ):
        done = (await system.chat(QUESTION))[-1]["data"]
        quote = next(c for c in done["citations"] if c["index"] == 1)["quote"]
        r = await ask(system, done)
        assert r.status_code == 200, r.text
        found = r.json()
        assert found["method"] == "verifier" and found["model"] and found["note"] is None
        assert found["claim"].startswith("The somatic mutation rate was estimated")
        spans = found["spans"]
        assert [quote[s["start"] : s["end"]] for s in spans] == [
            "The somatic mutation rate was estimated using whole-genome sequencing of 387 pairs of monozygotic twins.",
            "Early embryonic mutations were common.",
        ]
        assert spans[0]["probability"] > spans[1]["probability"]
        assert found["supporting"] == [1]
        assert found["unsupported_facts"] == ["412"]
        # Kept with the turn: a reload returns it, and asking again returns it as stored.
        assert (await stored_turn(system, done))["attributions"] == [found]
        assert (await ask(system, done)).json() == found
        # `refresh` judges again and replaces it; another occurrence is kept beside it.
        again = (await ask(system, done, refresh=True)).json()
        assert again["created_at"] != found["created_at"]
        other = (await ask(system, done, citation_index=2)).json()
        assert other["supporting"] == [1] and other["unsupported_facts"] == []
        assert (await stored_turn(system, done))["attributions"] == [again, other]


@pytest.mark.connected
async def test_bad_requests_get_a_clear_4xx_and_change_nothing_stored(nats_server):
    async with running_system(nats_server.url, verification_timeout_s=0.5) as system:
        done = (await system.chat(QUESTION))[-1]["data"]
        before = await stored_turn(system, done)
        bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
        r = await ask(system, done, headers=bob)
        assert r.status_code == 404 and r.json()["error"]["code"] == "turn_not_found"
        r = await ask(system, done, citation_index=9)
        assert r.status_code == 422 and r.json()["error"]["code"] == "unknown_citation"
        assert "its citations are: 1" in r.json()["error"]["message"]
        r = await ask(system, done, occurrence=5)
        assert r.status_code == 422 and r.json()["error"]["code"] == "unknown_occurrence"
        r = await ask(system, done, citation_index=0)
        assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
        await system.service_apps["verifier"].stop()
        r = await ask(system, done)
        assert r.status_code == 503 and r.json()["error"]["code"] == "verifier_unavailable"
        assert await stored_turn(system, done) == before
        assert before["attributions"] == []


@pytest.mark.connected
async def test_with_a_model_the_top_down_prompt_judges_and_a_bad_answer_falls_back_to_the_verifier(nats_server):
    model = LoopbackModel(ANSWER)
    judged = {"supporting": [1], "unsupported_facts": ["412 pairs"], "explanation": "The passage says 387 pairs."}
    model.replies = [ANSWER, [f"```json\n{json.dumps(judged)}\n```"], ['{"supporting": [1, 7]}']]
    async with (
        serving(model.app) as llm,
        running_system(
            nats_server.url,
            verifier=real_verifier(),
            llm_synthesizer_url=f"{llm}/v1",
            llm_attribution_url=f"{llm}/v1",
            llm_attribution_model="attributor",
        ) as system,
    ):
        done = (await system.chat(QUESTION))[-1]["data"]
        found = (await ask(system, done)).json()
        assert found["method"] == "llm" and found["model"] == "attributor"
        assert found["supporting"] == [1] and found["unsupported_facts"] == ["412 pairs"]
        assert found["explanation"] == "The passage says 387 pairs." and len(found["spans"]) == 2
        sent = model.requests[-1]
        assert sent["model"] == "attributor" and "top down" in sent["messages"][0]["content"]
        assert "never mention \"spans\"" in sent["messages"][0]["content"]
        assert "[2] Early embryonic mutations were common." in sent["messages"][1]["content"]
        asked = len(model.requests)
        assert (await ask(system, done)).json() == found and len(model.requests) == asked  # stored: not asked again
        # The model names a sentence the passage lacks: the verifier judges, and the note says so.
        fallback = (await ask(system, done, refresh=True)).json()
        assert fallback["method"] == "verifier" and fallback["supporting"] == [1]
        assert fallback["note"].startswith("The language model failed (") and "instead" in fallback["note"]
        assert (await stored_turn(system, done))["attributions"] == [fallback]


@pytest.mark.connected
async def test_attributions_asked_at_once_for_every_occurrence_are_all_kept(nats_server):
    model = LoopbackModel([*ANSWER, " Early embryonic mutations were common [1]."])
    async with serving(model.app) as llm, running_system(nats_server.url, llm_synthesizer_url=f"{llm}/v1") as system:
        done = (await system.chat(QUESTION))[-1]["data"]
        keys = [(c["index"], o["occurrence"]) for c in done["citations"] for o in c["occurrences"]]
        assert sorted(keys) == [(1, 1), (1, 2), (2, 1)]
        system.verifier.delay = 0.2  # they overlap: each reads the turn before any has written it
        answers = await asyncio.gather(*(ask(system, done, citation_index=i, occurrence=n) for i, n in keys))
        assert [r.status_code for r in answers] == [200] * len(keys)
        kept = (await stored_turn(system, done))["attributions"]
        assert sorted((a["citation_index"], a["occurrence"]) for a in kept) == sorted(keys)
