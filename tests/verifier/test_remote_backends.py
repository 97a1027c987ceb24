"""Remote backends fail open: timeout, 5xx, 429-then-success, 404 fallback, dead server."""

from __future__ import annotations

import json
import time

import httpx
import pytest
import respx

from zocrates_verifier.adapters.backends.base import (
    COMPOUND_QUESTION,
    SINGLE_QUESTION,
    DeadlineExceeded,
    NotAvailable,
    Pair,
    Unreachable,
)
from zocrates_verifier.adapters.backends.openrouter import OpenRouterBackend
from zocrates_verifier.adapters.backends.remote import RemoteBackend

REMOTE = "http://127.0.0.1:8005/v1/systemone"
DECISIONS = "https://openrouter.test/api/alpha/decisions"
CHAT = "https://openrouter.test/api/v1/chat/completions"
PAIRS = [
    Pair("claim one", "passage one"),
    Pair("claim two", "passage two", compound=True),
    Pair("claim three", "passage three"),
]


def laya_batch_answer(request: httpx.Request) -> httpx.Response:
    """What laya-serve answers: one result per state, `noul` per question id."""
    body = json.loads(request.content)
    results = [
        {
            "model": "laya",
            "answers": {
                qid: {"type": "noul", "noul": 0.1 * len(s["claim"]) % 1, "confidence": 0.9} for qid in body["questions"]
            },
            "usage": {"input_tokens": 10, "output_tokens": 0},
        }
        for s in body["states"]
    ]
    return httpx.Response(200, json={"results": results, "total_usage": {"input_tokens": 10, "output_tokens": 0}})


@respx.mock
async def test_remote_sends_one_round_trip_per_question_in_laya_format():
    route = respx.post(f"{REMOTE}/batch").mock(side_effect=laya_batch_answer)
    backend = RemoteBackend(REMOTE, api_key="k", timeout_s=2)
    outcomes = await backend.score(PAIRS, None)
    assert outcomes == [pytest.approx(0.1 * len(p.claim) % 1) for p in PAIRS]
    bodies = [json.loads(call.request.content) for call in route.calls]
    assert len(bodies) == 2
    by_question = {b["questions"]["support"]["instructions"]: b for b in bodies}
    assert by_question[SINGLE_QUESTION]["states"] == [
        {"source_text": "passage one", "claim": "claim one"},
        {"source_text": "passage three", "claim": "claim three"},
    ]
    assert by_question[COMPOUND_QUESTION]["questions"]["support"]["type"] == "noul"
    assert route.calls[0].request.headers["authorization"] == "Bearer k"
    await backend.close()


@respx.mock
async def test_remote_splits_large_groups_at_max_states():
    route = respx.post(f"{REMOTE}/batch").mock(side_effect=laya_batch_answer)
    backend = RemoteBackend(REMOTE, max_states=4)
    outcomes = await backend.score([Pair(f"c{i}", "p") for i in range(10)], None)
    assert len(route.calls) == 3 and all(isinstance(o, float) for o in outcomes)
    await backend.close()


@respx.mock
@pytest.mark.parametrize(
    "response, error",
    [
        (httpx.Response(503, text="busy"), Unreachable),
        (httpx.Response(500, text="inference failed"), Unreachable),
        (httpx.ConnectError("connection refused"), Unreachable),
        (httpx.ReadTimeout("slow"), DeadlineExceeded),
        (httpx.Response(200, json={"results": []}), Unreachable),
    ],
)
async def test_remote_failures_fail_open(response, error):
    respx.post(f"{REMOTE}/batch").mock(side_effect=[response, response])
    backend = RemoteBackend(REMOTE, timeout_s=1)
    outcomes = await backend.score(PAIRS, None)
    assert all(isinstance(o, error) for o in outcomes)
    await backend.close()


async def test_remote_dead_server_fails_open_and_reports_not_loaded():
    backend = RemoteBackend("http://127.0.0.1:9/v1/systemone", timeout_s=1)  # discard port
    await backend.start()
    assert backend.health()["loaded"] is False
    outcomes = await backend.score(PAIRS[:1], None)
    assert isinstance(outcomes[0], Unreachable)
    await backend.close()


async def test_remote_past_deadline_sends_nothing():
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(f"{REMOTE}/batch").mock(side_effect=laya_batch_answer)
        backend = RemoteBackend(REMOTE)
        outcomes = await backend.score(PAIRS, time.monotonic() - 1)
        assert all(isinstance(o, DeadlineExceeded) for o in outcomes) and not route.called
        await backend.close()


def decision(p: float) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "model": "typesafe/jev",
            "answers": {"support": {"type": "noul", "noul": p}},
            "usage": {"input_tokens": 5},
        },
    )


def openrouter(**kw) -> OpenRouterBackend:
    return OpenRouterBackend("sk-or-test", url=DECISIONS, chat_url=CHAT, timeout_s=1, **kw)


@respx.mock
async def test_openrouter_asks_a_noul_question_per_pair():
    route = respx.post(DECISIONS).mock(return_value=decision(0.83))
    backend = openrouter()
    assert await backend.score(PAIRS[:2], None) == [0.83, 0.83]
    bodies = [json.loads(c.request.content) for c in route.calls]
    assert bodies[0]["model"] == "~typesafe/jev-latest"
    assert {b["questions"]["support"]["instructions"] for b in bodies} == {SINGLE_QUESTION, COMPOUND_QUESTION}
    assert bodies[0]["state"] == {"source_text": "passage one", "claim": "claim one"} or bodies[1]["state"] == {
        "source_text": "passage one",
        "claim": "claim one",
    }
    assert route.calls[0].request.headers["authorization"] == "Bearer sk-or-test"
    await backend.close()


@respx.mock
async def test_openrouter_retries_a_429_once_after_250_ms():
    route = respx.post(DECISIONS).mock(side_effect=[httpx.Response(429), decision(0.7)])
    backend = openrouter()
    started = time.monotonic()
    assert await backend.score(PAIRS[:1], None) == [0.7]
    assert time.monotonic() - started >= 0.24 and route.call_count == 2
    await backend.close()


@respx.mock
async def test_openrouter_second_429_fails_open():
    respx.post(DECISIONS).mock(side_effect=[httpx.Response(429), httpx.Response(429)])
    backend = openrouter()
    assert isinstance((await backend.score(PAIRS[:1], None))[0], Unreachable)
    await backend.close()


@respx.mock
async def test_openrouter_404_falls_back_to_chat_completions_with_a_json_schema():
    decisions = respx.post(DECISIONS).mock(return_value=httpx.Response(404))
    chat = respx.post(CHAT).mock(
        return_value=httpx.Response(
            200, json={"choices": [{"message": {"content": json.dumps({"probability": 0.66})}}]}
        )
    )
    backend = openrouter(fallback_model="some/chat-model")
    assert await backend.score(PAIRS[:1], None) == [0.66]
    body = json.loads(chat.calls[0].request.content)
    assert body["model"] == "some/chat-model"
    assert body["response_format"]["type"] == "json_schema"
    assert "claim one" in body["messages"][-1]["content"]
    assert await backend.score(PAIRS[:1], None) == [0.66]
    assert decisions.call_count == 1  # the 404 is remembered
    await backend.close()


@respx.mock
@pytest.mark.parametrize(
    "response, error",
    [
        (httpx.Response(502), Unreachable),
        (httpx.ReadTimeout("slow"), DeadlineExceeded),
        (httpx.ConnectError("dns"), Unreachable),
        (httpx.Response(200, json={"answers": {"support": {"type": "noul", "noul": 3}}}), Unreachable),
    ],
)
async def test_openrouter_failures_fail_open(response, error):
    respx.post(DECISIONS).mock(side_effect=[response])
    backend = openrouter()
    assert isinstance((await backend.score(PAIRS[:1], None))[0], error)
    await backend.close()


async def test_openrouter_without_a_key_is_not_available():
    backend = OpenRouterBackend(None)
    outcomes = await backend.score(PAIRS, None)
    assert all(isinstance(o, NotAvailable) and "OPENROUTER_API_KEY" in str(o) for o in outcomes)
    await backend.close()
