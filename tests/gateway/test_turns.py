"""Whole turns through the real bus and the real HTTP API."""

from __future__ import annotations

import pytest

from harness.system import CHUNKS, FakeDiscovery, parse_sse, running_system
from zocrates_contracts import Pages

pytestmark = pytest.mark.connected


def kinds(events):
    return [e["event"] for e in events]


async def test_library_turn_streams_and_ends_in_done_with_verified_citations(system):
    events = await system.chat("What was the somatic mutation rate estimated from twins?")
    assert kinds(events)[0] == "turn" and kinds(events)[-1] == "done"
    assert "delta" in kinds(events) and "status" in kinds(events)
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    done = events[-1]["data"]
    assert done["intent"] == "library"
    assert done["citations"], "the extractive answer cites its passages"
    assert all(o["verdict"] == "KEPT" and o["probability"] == 0.9 for c in done["citations"] for o in c["occurrences"])
    assert "# Cited Sources" in done["text"]
    assert done["verification"]["provider"] == "fake"
    assert system.verifier.calls == 1


async def test_offline_quotes_are_marked_as_quotes_with_the_relevance_that_chose_them(system):
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    occurrences = [o for c in done["citations"] for o in c["occurrences"]]
    assert occurrences and all(o["quoted"] and o["relevance"] > 0 for o in occurrences)
    assert all(o["probability"] == 0.9 for o in occurrences)  # the verifier still scored each quote


async def test_a_citation_carries_the_printed_pages_of_its_passage_in_the_turn_and_its_session(system):
    pages = Pages(index=3, label="1236", last_index=4, last_label="1237")
    system.retrieval.chunks = [CHUNKS[0].model_copy(update={"pages": pages}), *CHUNKS[1:]]
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    cited = {c["chunk_id"]: c["pages"] for c in done["citations"]}
    assert cited["c1"] == pages.model_dump()
    assert all(p is None for chunk_id, p in cited.items() if chunk_id != "c1")  # no pages: none shown
    stored = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()
    assert stored["turns"] == [done]


async def test_a_question_the_library_does_not_answer_is_refused_citing_nothing(system):
    events = await system.chat("What is the boiling point of tungsten at high pressure?")
    done = events[-1]["data"]
    assert done["text"].startswith("I could not find a passage in your library")
    assert done["citations"] == [] and done["references"]["cited"] == []
    assert "# Cited Sources" not in done["text"]
    assert done["references"]["considered_summary"] == "Searched 3 passages from 3 items"
    assert len(done["references"]["considered"]) == 3
    assert system.verifier.calls == 0  # nothing to verify
    stored = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()
    assert stored["turns"] == [done]


async def test_the_done_payload_carries_the_prose_and_the_source_sections_apart(system):
    """Issue 15: the client renders `prose` and no longer strips the sections off `text`."""
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    assert done["schema_version"] == 7
    assert done["sources"].startswith("# Cited Sources") and "Cited Sources" not in done["prose"]
    assert done["text"] == done["prose"] + done["sources"]  # older clients read text as before
    small_talk = (await system.chat("hello"))[-1]["data"]
    assert small_talk["sources"] == "" and small_talk["text"] == small_talk["prose"]


async def test_a_turn_stored_before_version_2_is_read_back_with_its_prose_and_sources(system):
    import json

    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    old = {k: v for k, v in done.items() if k not in ("schema_version", "prose", "sources")}
    sessions = system.app.state.gateway.sessions
    await sessions.kv.put(f"t.alice.{done['session_id']}.{done['turn_id']}", json.dumps(old).encode())
    stored = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()
    assert stored["turns"] == [done]


async def test_rehydration_returns_the_done_payload(system):
    events = await system.chat("What was the somatic mutation rate estimated from twins?")
    done = events[-1]["data"]
    response = await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)
    assert response.status_code == 200
    assert response.json()["turns"] == [done]


async def test_kept_citations_carry_their_supporting_spans_and_the_turn_its_quality_also_on_reload(system):
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    citation = done["citations"][0]
    [span] = citation["occurrences"][0]["spans"]
    assert citation["quote"][span["start"] : span["end"]] == (
        "The somatic mutation rate was estimated using whole-genome sequencing of 387 pairs of monozygotic twins."
    )
    quality = done["quality"]
    assert quality["claims"] >= 1 and quality["supported"] == quality["claims"] - quality["uncited"]
    assert quality["citations"] == quality["supporting"] == done["verification"]["kept"]
    assert quality["precision"] == 1.0
    stored = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()
    assert stored["turns"] == [done]


async def test_demoted_citations_carry_no_spans_and_lower_precision(system):
    system.verifier.probability = 0.1
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    assert done["citations"] and all(o["spans"] == [] for c in done["citations"] for o in c["occurrences"])
    assert done["quality"]["supported"] == 0 and done["quality"]["precision"] == 0.0


async def test_small_talk_has_no_citation_quality(system):
    assert (await system.chat("hello"))[-1]["data"]["quality"] is None


async def test_demoted_citations_leave_the_cited_tier_empty(system):
    system.verifier.probability = 0.1
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    assert done["references"]["cited"] == []
    assert len(done["references"]["considered"]) == 3
    assert done["verification"]["demoted"] >= 1


async def test_citations_are_judged_against_the_threshold_the_verifier_reports(system):
    system.verifier.probability, system.verifier.threshold = 0.7, 0.8
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    assert done["verification"]["threshold"] == 0.8
    assert done["citations"] and all(o["verdict"] == "DEMOTED" for c in done["citations"] for o in c["occurrences"])
    system.verifier.threshold = 0.65
    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    assert done["verification"]["threshold"] == 0.65
    assert done["citations"] and all(o["verdict"] == "KEPT" for c in done["citations"] for o in c["occurrences"])


async def test_verifier_down_fails_open_and_keeps_citations(nats_server):
    async with running_system(nats_server.url, verification_timeout_s=0.5) as system:
        await system.service_apps["verifier"].stop()
        done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
        assert done["citations"]
        assert all(o["verdict"] == "FAIL_OPEN" for c in done["citations"] for o in c["occurrences"])
        assert "unverified" in done["verification"]["note"]


async def test_retrieval_down_ends_the_stream_with_a_clear_error(nats_server):
    async with running_system(nats_server.url, retrieval_timeout_s=0.5) as system:
        await system.service_apps["retrieval"].stop()
        events = await system.chat("What was the somatic mutation rate?")
        assert kinds(events)[-1] == "error"
        assert events[-1]["data"]["code"] == "timeout"
        assert "retrieval" in events[-1]["data"]["message"]


async def test_small_talk_has_no_citations_and_no_sources(system):
    done = (await system.chat("hello!"))[-1]["data"]
    assert done["intent"] == "chat" and done["citations"] == []
    assert "Cited Sources" not in done["text"]
    assert system.retrieval.calls == 0


async def test_discovery_without_internet_says_so_clearly(system):
    events = await system.chat("find new papers about CRISPR off-target effects")
    assert events[-1]["event"] == "error"
    assert events[-1]["data"]["code"] == "discovery_unreachable"
    assert "internet" in events[-1]["data"]["message"]


async def test_follow_up_turns_share_the_session_and_scope_their_citations(system):
    first = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    second = (await system.chat("thanks", session_id=first["session_id"]))[-1]["data"]
    assert second["session_id"] == first["session_id"] and second["citations"] == []
    session = (await system.client.get(f"{system.url}/sessions/{first['session_id']}", headers=system.auth)).json()
    assert [t["turn_id"] for t in session["turns"]] == [first["turn_id"], second["turn_id"]]


async def test_one_user_never_sees_another_users_sessions(system):
    done = (await system.chat("What was the somatic mutation rate?"))[-1]["data"]
    bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
    c = system.client
    assert (await c.get(f"{system.url}/sessions/{done['session_id']}", headers=bob)).status_code == 404
    assert (await c.delete(f"{system.url}/sessions/{done['session_id']}", headers=bob)).status_code == 404
    assert (await c.get(f"{system.url}/sessions", headers=bob)).json() == {"sessions": []}
    response = await c.post(f"{system.url}/chat", headers=bob, json={"message": "hi", "session_id": done["session_id"]})
    assert response.status_code == 404
    resumed = await c.get(f"{system.url}/chat/{done['turn_id']}/events", headers=bob)
    assert resumed.status_code == 404
    assert (await c.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).status_code == 200


async def test_resume_with_last_event_id_has_no_gap_and_no_duplicate(system):
    events = await system.chat("What was the somatic mutation rate estimated from twins?")
    turn_id = events[0]["data"]["turn_id"]
    for after in (0, 1, 3, len(events) - 1):
        r = await system.client.get(
            f"{system.url}/chat/{turn_id}/events", headers=system.auth | {"Last-Event-ID": str(after)}
        )
        assert r.status_code == 200
        assert parse_sse(r.text) == events[after:]


async def test_resume_replays_from_the_events_stream_after_the_turn_left_memory(system):
    events = await system.chat("What was the somatic mutation rate estimated from twins?")
    turn_id = events[0]["data"]["turn_id"]
    system.app.state.gateway.turns.clear()
    r = await system.client.get(f"{system.url}/chat/{turn_id}/events", headers=system.auth | {"Last-Event-ID": "2"})
    assert r.status_code == 200 and parse_sse(r.text) == events[2:]


async def test_delete_session_removes_it(system):
    done = (await system.chat("hello"))[-1]["data"]
    url = f"{system.url}/sessions/{done['session_id']}"
    assert (await system.client.delete(url, headers=system.auth)).status_code == 200
    assert (await system.client.get(url, headers=system.auth)).status_code == 404


async def test_health_has_no_detail_without_a_token_and_readiness_with_one(system):
    assert (await system.client.get(f"{system.url}/health")).json() == {"status": "ok"}
    # A probe waits half a second for its service; on a loaded machine the first may miss it
    # (a full test run here saw "unavailable" once), so readiness is asked a few times first.
    for _ in range(5):
        detail = (await system.client.get(f"{system.url}/health", headers=system.auth)).json()
        if detail["services"]["verifier"]["status"] == "ok":
            break
    assert set(detail["services"]) == {"retrieval", "verifier", "discovery", "staging"}
    assert detail["services"]["verifier"]["status"] == "ok"
    assert detail["gateway"]["answers"] == "extractive"  # no LLM configured in these tests


async def test_reverify_after_the_verifier_was_down_updates_the_stored_turn(nats_server):
    async with running_system(nats_server.url, verification_timeout_s=0.5) as system:
        verifier = system.service_apps["verifier"]
        await verifier.stop()
        done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
        assert done["verification"]["fail_open"] >= 1
        assert done["quality"]["unverified"] >= 1 and done["quality"]["precision"] is None
        await verifier.start()
        system.verifier.probability = 0.2
        body = {"session_id": done["session_id"], "turn_id": done["turn_id"]}
        r = await system.client.post(f"{system.url}/citations/verify", json=body, headers=system.auth)
        assert r.status_code == 200, r.text
        again = r.json()
        assert again["verification"]["demoted"] == done["verification"]["fail_open"]
        assert again["references"]["cited"] == []
        assert again["quality"]["unverified"] == 0 and again["quality"]["precision"] == 0.0
        system.verifier.probability = 0.9
        r = await system.client.post(f"{system.url}/citations/verify", json=body, headers=system.auth)
        again = r.json()
        assert all(o["spans"] for c in again["citations"] for o in c["occurrences"])
        stored = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()[
            "turns"
        ][0]
        assert stored == again


async def test_reverify_of_another_users_turn_is_404(system):
    done = (await system.chat("What was the somatic mutation rate?"))[-1]["data"]
    bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
    body = {"session_id": done["session_id"], "turn_id": done["turn_id"]}
    assert (await system.client.post(f"{system.url}/citations/verify", json=body, headers=bob)).status_code == 404


async def test_decision_model_connection_test_reports_latency_and_a_probability(system):
    r = await system.client.post(f"{system.url}/llm/test_decision_model", headers=system.auth)
    body = r.json()
    assert r.status_code == 200 and body["reachable"] is True
    assert body["provider"] == "fake" and body["sample_probability"] == 0.9 and body["latency_ms"] >= 0


async def test_discovery_turn_lists_candidates_and_its_notes(nats_server):
    from zocrates_contracts import Candidate, DroppedCandidate

    discovery = FakeDiscovery(
        candidates=[
            Candidate(
                candidate_id="W1",
                title="A new paper",
                authors=["Ada Lovelace"],
                year=2024,
                venue="Nature",
                pdf_url="https://example.org/a.pdf",
            )
        ],
        dropped=[
            DroppedCandidate(
                candidate=Candidate(candidate_id="W2", title="Owned"), reason="DOI already in your library"
            )
        ],
        notes=["OpenAlex demo mode (no API key)."],
    )
    async with running_system(nats_server.url, discovery=discovery) as system:
        events = await system.chat("find new papers about transformers")
        done = events[-1]["data"]
        assert events[-1]["event"] == "done" and done["intent"] == "discovery"
        assert [c["candidate_id"] for c in done["candidates"]] == ["W1"]
        assert "A new paper" in done["text"] and "1 already owned" in done["text"]
        # The request's topic was searched, without "find new papers about" (issue 17).
        assert done["notes"] == ["Searched for “transformers”.", "OpenAlex demo mode (no API key)."]
        assert "demo mode" in done["text"]
        assert done["citations"] == []


async def test_session_list_shows_the_users_sessions_newest_first(system):
    first = (await system.chat("hello"))[-1]["data"]
    second = (await system.chat("What was the somatic mutation rate?"))[-1]["data"]
    listed = (await system.client.get(f"{system.url}/sessions", headers=system.auth)).json()["sessions"]
    assert [s["session_id"] for s in listed] == [second["session_id"], first["session_id"]]
    assert listed[0]["turns"] == 1 and listed[0]["title"].startswith("What was")
    bob = {"Authorization": f"Bearer {await system.new_token('bob')}"}
    await system.chat("hi", token=bob["Authorization"][7:])
    assert len((await system.client.get(f"{system.url}/sessions", headers=system.auth)).json()["sessions"]) == 2


async def test_token_list_shows_ids_and_users_never_digests(system):
    rows = await system.app.state.gateway.tokens.list()
    assert [r["user_id"] for r in rows] == ["alice"]
    assert "digest" not in rows[0] and rows[0]["token_id"] == system.token.split("_")[1]
