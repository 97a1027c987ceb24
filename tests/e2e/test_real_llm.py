"""Whole turns against a real OpenAI-compatible server, when one is given.

The loopback model (tests/gateway/test_llm_path.py) proves every path and every failure in
CI; this module runs the same kinds of turn against a server someone else wrote, to catch what
a fake cannot: its own SSE framing (comments, keep-alive pings, a role-only first chunk), its
chat template, its pace. Set `ZOCRATES_TEST_LLM_URL` (e.g. `http://127.0.0.1:8080/v1`, a
llama.cpp server) and, if it names its model, `ZOCRATES_TEST_LLM_MODEL`; without them the
module is skipped. docs/llm.md records a run against llama.cpp serving SmolLM2-135M-Instruct.

A recording proxy sits between the gateway and the server, so each test sees exactly what was
asked of the model. The model's words are not judged (a small model cannot cite well); what
must hold is the protocol: every turn ends in `done`, deltas are what the model streamed,
claims it cited are verified, a follow-up is rewritten by the model before it is searched,
routing and the discovery overview ask the model and survive its answers, and rehydration
returns each turn exactly as it streamed.
"""

from __future__ import annotations

import json
import os

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from harness.serving import serving
from harness.system import FoundDiscovery, running_system
from zocrates_contracts import Candidate
from zocrates_gateway.domain.followup import REWRITE_PROMPT

URL = os.environ.get("ZOCRATES_TEST_LLM_URL", "").rstrip("/")
MODEL = os.environ.get("ZOCRATES_TEST_LLM_MODEL", "local")

pytestmark = [
    pytest.mark.connected,
    pytest.mark.slow,
    pytest.mark.timeout(900),
    pytest.mark.skipif(not URL, reason="no real language model server: set ZOCRATES_TEST_LLM_URL"),
]

# Generous: a small model on two busy cores writes a few dozen tokens a second.
DEADLINES = dict(synthesis_timeout_s=240.0)


class RecordingProxy:
    """Forwards `/v1/chat/completions` to the real server as it streams, keeping each request."""

    def __init__(self, upstream: str) -> None:
        self.upstream, self.requests = upstream, []
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.completions)

    async def completions(self, request: Request):
        body = await request.json()
        self.requests.append(body)
        client = httpx.AsyncClient(timeout=None)
        upstream = await client.send(
            client.build_request("POST", f"{self.upstream}/chat/completions", json=body), stream=True
        )

        async def relay():
            try:
                async for piece in upstream.aiter_raw():
                    yield piece
            finally:
                await upstream.aclose()
                await client.aclose()

        return StreamingResponse(
            relay(), status_code=upstream.status_code, media_type=upstream.headers.get("content-type")
        )

    def roles(self) -> list[str]:
        """Which role each request was for, by its system prompt's opening words."""
        found = []
        for body in self.requests:
            system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
            found.append(system.split(".")[0][:60])
        return found


async def session_turns(system, session_id: str) -> list[dict]:
    response = await system.client.get(f"{system.url}/sessions/{session_id}", headers=system.auth)
    return response.json()["turns"]


def streamed(events: list[dict]) -> str:
    return "".join(e["data"]["text"] for e in events if e["event"] == "delta")


async def test_a_library_turn_and_a_follow_up_with_a_real_model(nats_server):
    proxy = RecordingProxy(URL)
    async with (
        serving(proxy.app) as llm,
        running_system(nats_server.url, llm_url=f"{llm}/v1", llm_model=MODEL, **DEADLINES) as system,
    ):
        events = await system.chat("What was the somatic mutation rate estimated from twins?")
        done = events[-1]["data"]
        assert events[-1]["event"] == "done", events[-1]
        assert done["error"] is None and not any("language model failed" in n for n in done["notes"])
        assert streamed(events).strip(), "the model streamed nothing"
        occurrences = [o for c in done["citations"] for o in c["occurrences"]]
        assert done["verification"] is None or done["verification"]["total"] == len(occurrences)
        assert await session_turns(system, done["session_id"]) == [done]

        # A follow-up: the model rewrites it into a standalone query, which retrieval is sent.
        asked = len(proxy.requests)
        events = await system.chat("How many pairs did they sequence?", session_id=done["session_id"])
        second = events[-1]["data"]
        assert events[-1]["event"] == "done", events[-1]
        # (the coordinator may be asked to route it first: find the rewrite by its prompt)
        [rewrite] = [r for r in proxy.requests[asked:] if r["messages"][0]["content"] == REWRITE_PROMPT]
        assert rewrite["messages"][-1]["content"].endswith("Standalone search query:")
        assert "somatic mutation rate" in json.dumps(rewrite["messages"])  # the remembered turn
        query = system.retrieval.requests[-1].query
        assert query and "[" not in query
        assert [t["turn_id"] for t in await session_turns(system, done["session_id"])] == [
            done["turn_id"],
            second["turn_id"],
        ]
        print(f"\nreal model: answer {streamed(events)[:200]!r}; follow-up searched as {query!r}")


async def test_routing_and_a_discovery_overview_with_a_real_model(nats_server):
    proxy = RecordingProxy(URL)
    found = FoundDiscovery(Candidate(candidate_id="W1", title="Retrieval-augmented generation at scale", year=2024))
    async with (
        serving(proxy.app) as llm,
        running_system(nats_server.url, discovery=found, llm_url=f"{llm}/v1", llm_model=MODEL, **DEADLINES) as system,
    ):
        events = await system.chat("find recent papers on retrieval augmented generation")
        done = events[-1]["data"]
        assert events[-1]["event"] == "done" and done["intent"] == "discovery", events[-1]
        assert [c["candidate_id"] for c in done["candidates"]] == ["W1"]
        # The online-search role planned the search (or the rules did, when its JSON was unusable).
        [sent] = found.requests
        assert sent.queries and all(q.strip() for q in sent.queries)
        assert await session_turns(system, done["session_id"]) == [done]

        # A message the rules would send to the library is routed by the coordinator: whatever
        # it answers, the turn ends in `done` with one of the three intents.
        events = await system.chat("Anything on transformer architectures?")
        assert events[-1]["event"] == "done", events[-1]
        assert events[0]["data"]["intent"] in {"library", "discovery", "chat"}
        print(f"\nreal model: roles asked {proxy.roles()}")
