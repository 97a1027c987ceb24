"""Whole turns with a language model: a real OpenAI-compatible server on loopback streams
chat-completion chunks over HTTP and SSE, and the real verifier service scores the claims.

A library turn goes deltas → claims → verification → resolution → `done` → rehydration; a
discovery turn gets its overview from the model. Every way the model can fail (an HTTP 4xx or
5xx, a stream cut mid-answer, a stream that ends without `[DONE]`, a stall past the deadline)
ends the turn cleanly: by default with the offline answer and a note saying why, and with
`llm_fallback` off with a clear error that the session keeps.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from harness.llm import LoopbackModel
from harness.serving import serving
from harness.system import FoundDiscovery, running_system
from zocrates_contracts import Candidate

pytestmark = pytest.mark.connected

QUESTION = "What was the somatic mutation rate estimated from twins?"
# [1] and [2] are supported by their passages (tests/harness/system.py CHUNKS); [3] is not.
ANSWER = [
    "The somatic mutation rate was estimated ",
    "using whole-genome sequencing of 387 pairs of monozygotic twins [1]. ",
    "An attention function maps a query and key-value pairs to an output [2]. ",
    "Twins share every somatic mutation they carry [3].",
]


def real_verifier():
    from zocrates_verifier.config import VerifierSettings
    from zocrates_verifier.service import VerifierService

    return VerifierService(VerifierSettings(provider="heuristic"))


async def session_turns(system, session_id: str) -> list[dict]:
    response = await system.client.get(f"{system.url}/sessions/{session_id}", headers=system.auth)
    return response.json()["turns"]


async def test_a_library_turn_with_a_model_is_verified_resolved_stored_and_rehydrated(nats_server):
    model = LoopbackModel(ANSWER)
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, verifier=real_verifier(), llm_url=f"{llm}/v1") as system,
    ):
        events = await system.chat(QUESTION)
        done = events[-1]["data"]
        assert events[-1]["event"] == "done", events[-1]
        # The model was sent the evidence and the question; the deltas are its answer as streamed.
        [sent] = model.answer_requests
        assert sent["stream"] is True and sent["messages"][-1] == {"role": "user", "content": QUESTION}
        assert "387 pairs of monozygotic twins" in sent["messages"][0]["content"]
        assert "".join(e["data"]["text"] for e in events if e["event"] == "delta") == "".join(ANSWER)
        # Every occurrence was scored by the real verifier; the unsupported [3] lost its citation.
        v = done["verification"]
        assert v["provider"] == "heuristic" and v["total"] == 3 and v["fail_open"] == 0
        assert v["kept"] == 2 and v["demoted"] == 1
        cited = {c["item_key"] for c in done["citations"] if any(o["verdict"] != "DEMOTED" for o in c["occurrences"])}
        assert cited == {"ITEMAAAA", "ITEMBBBB"}
        assert [r["item_key"] for r in done["references"]["cited"]] == ["ITEMAAAA", "ITEMBBBB"]
        assert all(o["probability"] is not None for c in done["citations"] for o in c["occurrences"])
        assert done["notes"] == [] and done["error"] is None
        # Rehydration returns exactly what streamed.
        assert await session_turns(system, done["session_id"]) == [done]


@pytest.mark.parametrize("mode", ["http_400", "http_503", "cut", "no_done", "stall"])
async def test_a_failing_model_falls_back_to_the_offline_answer_with_a_note(nats_server, mode):
    model = LoopbackModel(ANSWER)
    model.mode = mode
    async with (
        serving(model.app) as llm,
        running_system(
            nats_server.url, verifier=real_verifier(), llm_url=f"{llm}/v1", synthesis_timeout_s=1.0
        ) as system,
    ):
        try:
            events = await asyncio.wait_for(system.chat(QUESTION), 30)
        finally:
            model.release.set()
        done = events[-1]["data"]
        assert events[-1]["event"] == "done", events[-1]
        assert {"stage": "fallback"}.items() <= next(
            e["data"] for e in events if e["event"] == "status" and e["data"]["stage"] == "fallback"
        ).items()
        assert done["notes"][0].startswith("The language model failed (")
        assert done["notes"][0].endswith("this answer quotes your library instead.")
        # The offline writer's answer: a quote of the passage that holds it, cited and kept.
        assert "387 pairs of monozygotic twins" in done["prose"]
        assert "Twins share every somatic mutation" not in done["prose"]
        assert [c["item_key"] for c in done["citations"]][:1] == ["ITEMAAAA"]
        assert await session_turns(system, done["session_id"]) == [done]


@pytest.mark.parametrize(("mode", "code"), [("http_503", "synthesis_failed"), ("stall", "timeout")])
async def test_without_the_fallback_a_failing_model_ends_the_turn_with_a_clear_error(nats_server, mode, code):
    model = LoopbackModel(ANSWER)
    model.mode = mode
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, llm_url=f"{llm}/v1", synthesis_timeout_s=1.0, llm_fallback=False) as system,
    ):
        try:
            events = await asyncio.wait_for(system.chat(QUESTION), 30)
        finally:
            model.release.set()
        end = events[-1]
        assert end["event"] == "error" and end["data"]["code"] == code
        assert ("503" in end["data"]["message"]) if mode == "http_503" else ("1 s" in end["data"]["message"])
        [stored] = await session_turns(system, events[0]["data"]["session_id"])
        assert stored["error"] == end["data"]
        assert stored["prose"] == "".join(e["data"]["text"] for e in events if e["event"] == "delta")


def one_candidate() -> FoundDiscovery:
    return FoundDiscovery(Candidate(candidate_id="W1", title="Retrieval-augmented generation at scale", year=2024))


@pytest.mark.parametrize("mode", ["ok", "http_500"])
async def test_a_discovery_turn_gets_the_models_overview_or_keeps_its_candidates(nats_server, mode):
    overview = ["One new paper scales retrieval-augmented ", "generation [1]."]
    model = LoopbackModel(overview)
    model.mode = mode
    model.plan = {"queries": ["retrieval augmented generation", "RAG question answering"], "from_year": 2023}
    discovery = one_candidate()
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, discovery=discovery, llm_url=f"{llm}/v1") as system,
    ):
        events = await system.chat("find recent papers on retrieval augmented generation")
        done = events[-1]["data"]
        assert events[-1]["event"] == "done" and done["intent"] == "discovery"
        assert [c["candidate_id"] for c in done["candidates"]] == ["W1"]
        assert "Retrieval-augmented generation at scale" in model.answer_requests[-1]["messages"][0]["content"]
        [sent] = discovery.requests
        if mode == "ok":  # the online-search role planned the searches
            assert (sent.queries, sent.from_year) == (model.plan["queries"], 2023)
            said = "Searched for “retrieval augmented generation”, “RAG question answering”, published since 2023."
            assert done["prose"].startswith("".join(overview)) and done["notes"] == [said]
        else:  # the model failed at every step: routed, searched and listed by the rules
            assert (sent.queries, sent.from_year) == (["retrieval augmented generation"], datetime.now(UTC).year - 2)
            said = f"Searched for “retrieval augmented generation”, published since {datetime.now(UTC).year - 2}."
            assert "Retrieval-augmented generation at scale" in done["prose"]
            assert done["notes"][0].startswith("The overview could not be written (LLM endpoint answered HTTP 500")
            assert done["notes"][1:] == [said]
        assert await session_turns(system, done["session_id"]) == [done]


@pytest.mark.parametrize(
    ("route", "intent"),
    [({"intent": "discovery"}, "discovery"), ({"intent": "chat"}, "chat"), ({"intent": "poetry"}, "library")],
)
async def test_the_coordinator_routes_what_the_rules_would_send_to_the_library(nats_server, route, intent):
    model = LoopbackModel(["Transformers use attention [2]."])
    model.route = route  # an unknown route is nonsense: the rules decide
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, discovery=one_candidate(), llm_url=f"{llm}/v1") as system,
    ):
        events = await system.chat("Anything on transformer architectures?")
        assert events[0]["data"]["intent"] == intent and events[-1]["event"] == "done"
        # Small talk the rules recognise is answered without asking the model, and fittingly.
        before = len(model.requests)
        thanks = (await system.chat("thanks!"))[-1]["data"]
        assert thanks["intent"] == "chat" and thanks["prose"].startswith("You're welcome")
        assert len(model.requests) == before


async def test_a_number_the_passage_does_not_print_loses_its_citation(nats_server):
    """The verifier's number rule through a whole turn: the model's right number keeps its
    citation; the same sentence with another number scores the rule's cap and is demoted, and
    the occurrence and the unsupported claim name the number the passage does not print."""
    from zocrates_verifier.domain.numbers import UNPRINTED_NUMBER_SUPPORT

    model = LoopbackModel(
        [
            "The somatic mutation rate was estimated using whole-genome sequencing of 387 pairs of monozygotic twins [1]. ",
            "The somatic mutation rate was estimated using whole-genome sequencing of 783 pairs of monozygotic twins [1].",
        ]
    )
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, verifier=real_verifier(), llm_url=f"{llm}/v1") as system,
    ):
        done = (await system.chat(QUESTION))[-1]["data"]
        [citation] = done["citations"]
        right, changed = citation["occurrences"]
        assert right["verdict"] == "KEPT" and right["probability"] > UNPRINTED_NUMBER_SUPPORT
        assert changed["verdict"] == "DEMOTED" and changed["probability"] == UNPRINTED_NUMBER_SUPPORT
        assert (right["unprinted_numbers"], changed["unprinted_numbers"]) == ([], ["783"])
        # the claim is kept in the prose without its citation, and listed as unsupported
        [unsupported] = done["unsupported"]
        assert "783 pairs" in unsupported["claim"] and unsupported["probability"] == UNPRINTED_NUMBER_SUPPORT
        assert unsupported["unprinted_numbers"] == ["783"]
        assert done["prose"].count("[1]") == 1
