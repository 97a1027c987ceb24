"""The verifier over HTTP, in TypeSafe Jev's `/v1/systemone` wire format as Laya serves it.

The format follows `laya.serve` (laya 0.4.x, "HTTP server exposing Laya over TypeSafe Jev's
/v1/systemone wire protocol"), so a Laya or Jev client only changes its base URL:

    POST /v1/systemone
    {"state": {"source_text": "...", "claim": "..."},
     "questions": {"support": {"type": "noul",
                               "instructions": "Does the source_text support the claim?"}}}
    -> 200 {"model": "...",
            "answers": {"support": {"type": "noul", "noul": 0.83, "confidence": 0.83}},
            "usage": {"input_tokens": 212, "output_tokens": 0}}

    POST /v1/systemone/batch
    {"states": [<state>, ...], "questions": {<qid>: <noul question>, ...}}
    -> 200 {"results": [<one /v1/systemone response per state, in order>],
            "total_usage": {"input_tokens": ..., "output_tokens": 0}}

    GET /health -> {"status": "ok", "device", "loaded", "checkpoint_devices",
                    "cpu_fallbacks", "provider", "model", ...}

Every state is answered for every question (`states x questions`), all of them scored in
the same micro-batches as the bus traffic. What this server narrows, on purpose:
- a state is an object with non-empty string `claim` and `source_text`;
- questions are `noul` and ask one of the two verification questions (backticks, case and
  spacing ignored): "Does the source_text support the claim?" or "This claim cites multiple
  sources. Does the source_text support a substantive part of the claim?". A decision model
  may answer any question; a support scorer answering another one would mislead, so it is
  refused (422) with the two it answers.
- `usage.input_tokens` is the scorer's token estimate; `output_tokens` is always 0.

Errors are `{"detail": "..."}`: 400 malformed, 401 bad bearer (`WWW-Authenticate: Bearer`),
413 over a bound (body bytes, states, questions, claim or passage length), 422 unsupported
question or state, 503 with `Retry-After` when saturated (admission or the batch queue), 504
when the request's deadline (`request_timeout_s`) passed, 500 when scoring failed, 502 when
the upstream (remote backend) could not be reached. `/health` answers liveness without a
token and the full payload with one.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import math
import time
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from zocrates_contracts.messages import MAX_CLAIM_CHARS, MAX_PAIRS, MAX_SOURCE_CHARS
from zocrates_verifier.adapters.backends.base import (
    COMPOUND_QUESTION,
    SINGLE_QUESTION,
    Outcome,
    Overloaded,
    Pair,
    VerifierError,
    compound_for_question,
)
from zocrates_verifier.service import VerifierService


class _Refusal(Exception):
    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None):
        super().__init__(detail)
        self.status, self.detail, self.headers = status, detail, headers or {}


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


async def _read_json(request: Request, limit: int) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Refusal(413, f"body of {declared} bytes is over the {limit}-byte limit")
    body = bytearray()
    async for chunk in request.stream():  # counted as it arrives: Content-Length may lie
        body += chunk
        if len(body) > limit:
            raise _Refusal(413, f"body is over the {limit}-byte limit")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Refusal(400, f"body is not JSON: {exc}") from exc


def _questions(body: dict, limit: int) -> list[tuple[str, bool]]:
    questions = body.get("questions")
    if not isinstance(questions, dict) or not questions:
        raise _Refusal(400, "'questions' must be a non-empty object of question id -> question")
    if len(questions) > limit:
        raise _Refusal(413, f"too many questions ({len(questions)} > {limit})")
    parsed = []
    for qid, question in questions.items():
        if not isinstance(question, dict) or question.get("type") != "noul":
            raise _Refusal(422, f"question {qid!r}: only 'noul' questions are answered here")
        compound = compound_for_question(str(question.get("instructions", "")))
        if compound is None:
            raise _Refusal(
                422, f"question {qid!r}: this verifier answers only {SINGLE_QUESTION!r} or {COMPOUND_QUESTION!r}"
            )
        parsed.append((qid, compound))
    return parsed


def _state(state: Any, where: str) -> tuple[str, str]:
    if not isinstance(state, dict):
        raise _Refusal(422, f"{where} must be an object with 'claim' and 'source_text' strings")
    claim, source = state.get("claim"), state.get("source_text")
    for name, value, limit in (("claim", claim, MAX_CLAIM_CHARS), ("source_text", source, MAX_SOURCE_CHARS)):
        if not isinstance(value, str) or not value.strip():
            raise _Refusal(422, f"{where}.{name} must be a non-empty string")
        if len(value) > limit:
            raise _Refusal(
                413,
                f"{where}.{name} is {len(value)} characters (limit {limit}); send the cited passage, not the document",
            )
    return claim, source


def _raise_for(outcomes: list[Outcome]) -> None:
    """Map the worst failure to a status; HTTP has no per-pair `None` in Jev's format."""
    errors = [o for o in outcomes if isinstance(o, VerifierError)]
    if not errors:
        return
    codes = {e.code for e in errors}
    status = (
        504
        if "timeout" in codes
        else 502
        if "unreachable" in codes
        else 503
        if codes & {"overloaded", "not_available"}
        else 500
    )
    headers = {"Retry-After": "1"} if status == 503 else None
    raise _Refusal(status, f"{len(errors)} of {len(outcomes)} pairs not scored: {errors[0]}", headers)


def create_http_app(service: VerifierService) -> FastAPI:
    """The FastAPI app serving `service` (started by whoever owns its lifecycle)."""
    settings = service.settings
    key = settings.http_api_key.get_secret_value() if settings.http_api_key else None
    expected = f"Bearer {key}".encode("utf-8", "surrogateescape") if key else b""
    admission = asyncio.Semaphore(settings.http_max_concurrent)
    app = FastAPI(
        title="Zocrates verifier",
        summary="Citation support probabilities over the /v1/systemone protocol",
        docs_url=None if key else "/docs",
        redoc_url=None,
        openapi_url=None if key else "/openapi.json",
    )

    def authorized(request: Request) -> bool:
        if key is None:
            return True
        supplied = request.headers.get("authorization", "").encode("utf-8", "surrogateescape")
        return hmac.compare_digest(supplied, expected)  # constant time, bytes: never raises

    async def answer(request: Request, batch: bool) -> JSONResponse:
        if not authorized(request):
            return _error(401, "invalid or missing bearer token", {"WWW-Authenticate": "Bearer"})
        if admission.locked():
            return _error(503, "verifier busy, try again later", {"Retry-After": "1"})
        async with admission:
            try:
                return await _answer(request, batch)
            except _Refusal as refusal:
                return _error(refusal.status, refusal.detail, refusal.headers)
            except Overloaded as exc:
                return _error(503, str(exc), {"Retry-After": str(math.ceil(exc.retry_after_s))})

    async def _answer(request: Request, batch: bool) -> JSONResponse:
        body = await _read_json(request, settings.http_max_body_bytes)
        if not isinstance(body, dict):
            raise _Refusal(400, "body must be a JSON object")
        questions = _questions(body, settings.http_max_questions)
        if batch:
            states = body.get("states")
            if not isinstance(states, list) or not states:
                raise _Refusal(400, "'states' must be a non-empty list")
            if len(states) > settings.http_max_states:
                raise _Refusal(413, f"too many states ({len(states)} > {settings.http_max_states})")
        else:
            if "state" not in body:
                raise _Refusal(400, "'state' is required")
            states = [body["state"]]
        if len(states) * len(questions) > MAX_PAIRS:
            raise _Refusal(413, f"states x questions = {len(states) * len(questions)} pairs (limit {MAX_PAIRS})")
        parsed = [_state(s, f"states[{i}]" if batch else "state") for i, s in enumerate(states)]
        pairs = [Pair(claim, source, compound) for claim, source in parsed for _, compound in questions]
        started = time.perf_counter()
        outcomes = await service.score(pairs, time.monotonic() + settings.request_timeout_s)
        took_ms = (time.perf_counter() - started) * 1000.0
        _raise_for(outcomes)
        results, total = [], 0
        for i, (claim, source) in enumerate(parsed):
            answers = {}
            for j, (qid, _) in enumerate(questions):
                p = float(outcomes[i * len(questions) + j])
                answers[qid] = {"type": "noul", "noul": round(p, 4), "confidence": round(max(p, 1.0 - p), 4)}
            tokens = (len(claim) + len(source)) // 4 * len(questions)
            total += tokens
            results.append(
                {"model": service.model, "answers": answers, "usage": {"input_tokens": tokens, "output_tokens": 0}}
            )
        payload = (
            {"results": results, "total_usage": {"input_tokens": total, "output_tokens": 0}} if batch else results[0]
        )
        return JSONResponse(payload, headers={"Server-Timing": f"inference;dur={took_ms:.2f}"})

    @app.post("/v1/systemone")
    async def systemone(request: Request) -> JSONResponse:
        """Answer the questions about one state (`{"state", "questions"}`)."""
        return await answer(request, batch=False)

    @app.post("/v1/systemone/batch")
    async def systemone_batch(request: Request) -> JSONResponse:
        """Answer the questions about every state (`{"states", "questions"}`), in order."""
        return await answer(request, batch=True)

    @app.get("/health")
    async def health(request: Request) -> dict[str, Any]:
        """Liveness for anyone; the full readiness payload for a caller with the token."""
        if not authorized(request):
            return {"status": "ok"}
        return service.health()

    return app
