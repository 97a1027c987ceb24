"""Faults during a turn: the stream always ends, a failed turn is kept with its error, nothing is stored twice."""

from __future__ import annotations

import asyncio
import signal

import pytest

from harness.processes import kill, spawn, wait_ready
from harness.system import running_system
from harness.waiting import wait_until
from zocrates_contracts.subjects import AUDIT_STREAM, RETRIEVAL_CONSUMER, TURN_RESOLVED

pytestmark = pytest.mark.connected


def replica_working(system):
    """The condition "a retrieval replica holds a request, unacknowledged": it is working on it."""
    js = system.app.state.gateway.broker.config.connection_state.stream

    async def working() -> bool:
        return (await js.consumer_info(AUDIT_STREAM, RETRIEVAL_CONSUMER)).num_ack_pending >= 1

    return working


async def test_retrieval_killed_mid_turn_ends_the_stream_with_an_error_and_keeps_the_turn_with_it(nats_server):
    async with running_system(nats_server.url, retrieval_timeout_s=3.0) as system:
        await system.service_apps["retrieval"].stop()  # only the killable replica serves
        replica = spawn("harness.slow_service", "retrieval", nats_server.url, "30")
        try:
            await wait_ready(replica)
            chat = asyncio.create_task(system.chat("What was the somatic mutation rate?"))
            await wait_until(replica_working(system), 10, "the replica to take the request")
            replica.send_signal(signal.SIGKILL)
            events = await asyncio.wait_for(chat, 10)
        finally:
            kill(replica)
        assert events[-1]["event"] == "error" and events[-1]["data"]["code"] == "timeout"
        session = events[0]["data"]["session_id"]
        stored = (await system.client.get(f"{system.url}/sessions/{session}", headers=system.auth)).json()
        # The session keeps the turn as it ended (issue 17): its error, no answer, no citations.
        [turn] = stored["turns"]
        assert turn["turn_id"] == events[0]["data"]["turn_id"] and turn["schema_version"] == 7
        assert turn["error"] == events[-1]["data"] and turn["prose"] == "" and turn["citations"] == []


async def test_a_turn_is_stored_once_even_if_its_resolution_is_republished(system):
    events = await system.chat("What was the somatic mutation rate estimated from twins?")
    done = events[-1]["data"]
    js = system.app.state.gateway.broker.config.connection_state.stream
    from zocrates_contracts import TurnRecord

    record = TurnRecord.model_validate(done)
    await system.app.state.gateway.sessions.add_turn("alice", record)  # a retried persist
    session = (await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)).json()
    assert [t["turn_id"] for t in session["turns"]] == [done["turn_id"]]
    info = await js.stream_info(AUDIT_STREAM, subjects_filter=TURN_RESOLVED)
    assert info.state.subjects == {TURN_RESOLVED: 1}


async def test_a_store_read_waits_out_a_brief_outage_and_a_longer_one_is_a_503(system, monkeypatch):
    import nats.errors

    from zocrates_gateway.adapters import sessions as session_store

    done = (await system.chat("What was the somatic mutation rate estimated from twins?"))[-1]["data"]
    sessions = system.app.state.gateway.sessions
    real_get, failures = sessions.kv.get, {"left": 2}

    async def flaky_get(key, *args, **kwargs):  # what a KV read raises while its stream elects a leader
        if failures["left"] > 0:
            failures["left"] -= 1
            raise nats.errors.TimeoutError
        return await real_get(key, *args, **kwargs)

    monkeypatch.setattr(sessions.kv, "get", flaky_get)
    url = f"{system.url}/sessions/{done['session_id']}"
    waited = await system.client.get(url, headers=system.auth)
    assert waited.status_code == 200 and [t["turn_id"] for t in waited.json()["turns"]] == [done["turn_id"]]

    monkeypatch.setattr(session_store, "READ_RETRY_S", 0.3)
    failures["left"] = 10**6  # down for longer than a read waits
    down = await system.client.get(url, headers=system.auth)
    assert down.status_code == 503 and down.headers["retry-after"]
    assert down.json()["error"]["code"] == "bus_unavailable" and "try again" in down.json()["error"]["message"]
    failures["left"] = 0
    again = await system.client.get(url, headers=system.auth)
    assert again.status_code == 200 and again.json()["turns"] == waited.json()["turns"]
