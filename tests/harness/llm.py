"""A real OpenAI-compatible chat-completions server for tests, served on loopback with
`harness.serving.serving(model.app)`: it streams its replies as chat-completion chunks over SSE,
and fails in the ways a real one can (`mode`)."""

from __future__ import annotations

import asyncio
import json

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse


class LoopbackModel:
    """An OpenAI-compatible `/v1/chat/completions` that streams `reply` in the given `mode`."""

    def __init__(self, reply: list[str]) -> None:
        self.reply, self.mode, self.requests = reply, "ok", []
        self.replies: list[list[str]] = []  # answered in turn, one a request, before `reply`
        # What the coordinator and the online-search role answer (JSON), when asked.
        self.route: dict = {"intent": "library"}
        self.plan: dict = {"queries": ["retrieval augmented generation"], "from_year": None}
        self.release = asyncio.Event()  # ends a stall when the test is over
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.completions)

    @staticmethod
    def chunk(delta: dict, finish: str | None = None) -> str:
        body = {"id": "c1", "object": "chat.completion.chunk", "model": "loopback"}
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        return f"data: {json.dumps(body)}\n\n"

    @property
    def answer_requests(self) -> list[dict]:
        """The requests for answers: all but the coordinator's and the online-search role's."""
        return [r for r in self.requests if self.role_of(r) is None]

    @staticmethod
    def role_of(body: dict) -> str | None:
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if system.startswith("You route one message"):
            return "coordinator"
        if system.startswith("You turn a researcher's request for new literature"):
            return "online_search"
        return None

    async def completions(self, request: Request):
        body = await request.json()
        self.requests.append(body)
        if self.mode.startswith("http_"):
            status = int(self.mode[5:])
            return JSONResponse({"error": {"message": f"loopback says {status}"}}, status_code=status)
        role = self.role_of(body)
        if role is not None:  # a decision, answered as a model would: JSON in a sentence
            decision = self.route if role == "coordinator" else self.plan
            return StreamingResponse(
                self.stream([f"Here you go: {json.dumps(decision)}"]), media_type="text/event-stream"
            )
        reply = self.replies.pop(0) if self.replies else self.reply
        return StreamingResponse(self.stream(reply), media_type="text/event-stream")

    async def stream(self, reply: list[str]):
        yield self.chunk({"role": "assistant", "content": ""})
        for at, piece in enumerate(reply):
            if self.mode == "cut" and at == 2:
                raise ConnectionResetError("the model's server went away mid-answer")
            if self.mode == "stall" and at == 1:
                await self.release.wait()
                return
            yield self.chunk({"content": piece})
        if self.mode == "no_done":
            return
        yield self.chunk({}, finish="stop")
        yield "data: [DONE]\n\n"
