"""OpenRouter's decisions endpoint: one `noul` question per pair, pairs sent concurrently.

Request (`POST /api/alpha/decisions`): `{"model", "state": {"source_text", "claim"},
"questions": {"support": {"type": "noul", "instructions": <question>}}}`; the answer is
`answers.support.noul`, the probability of yes. The endpoint takes one state per request, so
a turn's pairs go out concurrently (at most `concurrency` at once).

Resilience, as the seed specifies: a 429 is retried once after 250 ms; a 404 (the alpha
endpoint gone, or the model not served there) switches to chat completions with a JSON
schema for the rest of the process's life; timeouts, 5xx and network errors fail open.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any

import httpx

from zocrates_verifier.adapters.backends.base import (
    Backend,
    DeadlineExceeded,
    NotAvailable,
    Outcome,
    Pair,
    Unreachable,
)
from zocrates_verifier.adapters.backends.remote import QUESTION_ID
from zocrates_verifier.config import DEFAULT_OPENROUTER_MODEL

RETRY_429_AFTER_S = 0.25

_SCHEMA = {
    "name": "support_probability",
    "strict": True,
    "schema": {
        "type": "object",
        "additionalProperties": False,
        "required": ["probability"],
        "properties": {"probability": {"type": "number", "minimum": 0, "maximum": 1}},
    },
}


def decision_body(pair: Pair, model: str) -> dict[str, Any]:
    return {
        "model": model,
        "state": {"source_text": pair.source_text, "claim": pair.claim},
        "questions": {QUESTION_ID: {"type": "noul", "instructions": pair.question}},
    }


def chat_body(pair: Pair, model: str) -> dict[str, Any]:
    state = json.dumps({"source_text": pair.source_text, "claim": pair.claim})
    return {
        "model": model,
        "temperature": 0,
        "messages": [
            {
                "role": "system",
                "content": "You verify citations. Answer with the probability "
                "(0 to 1) that the answer to the question is yes, as JSON.",
            },
            {"role": "user", "content": f"{state}\n\nQuestion: {pair.question}"},
        ],
        "response_format": {"type": "json_schema", "json_schema": _SCHEMA},
    }


class _Status(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(f"HTTP {status}: {text[:200]}")
        self.status = status


class OpenRouterBackend(Backend):
    """Scores pairs with an OpenRouter decision model (default TypeSafe Jev)."""

    provider = "openrouter"

    def __init__(
        self,
        api_key: str | None,
        *,
        model: str = "",
        url: str = "https://openrouter.ai/api/alpha/decisions",
        chat_url: str = "https://openrouter.ai/api/v1/chat/completions",
        fallback_model: str = "",
        timeout_s: float = 10.0,
        concurrency: int = 8,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model or DEFAULT_OPENROUTER_MODEL
        self.device = "remote"
        self._key = api_key
        self.url, self.chat_url = url, chat_url
        self.fallback_model = fallback_model or self.model
        self.timeout_s = timeout_s
        self._client = client or httpx.AsyncClient()
        self._slots = asyncio.Semaphore(concurrency)
        self.decisions_missing = False  # set by a 404: use chat completions from then on

    async def score(self, pairs: Sequence[Pair], deadline: float | None) -> list[Outcome]:
        if not self._key:
            error = NotAvailable(
                "no OpenRouter key configured (set ZOCRATES_VERIFIER_OPENROUTER_API_KEY or OPENROUTER_API_KEY)"
            )
            return [error] * len(pairs)
        return list(await asyncio.gather(*(self._one(p, deadline) for p in pairs)))

    async def _one(self, pair: Pair, deadline: float | None) -> Outcome:
        async with self._slots:
            try:
                if not self.decisions_missing:
                    try:
                        return await self._with_429_retry(self._decide, pair, deadline)
                    except _Status as exc:
                        if exc.status != 404:
                            raise
                        self.decisions_missing = True
                return await self._with_429_retry(self._chat, pair, deadline)
            except DeadlineExceeded as exc:
                return exc
            except httpx.TimeoutException:
                return DeadlineExceeded(f"OpenRouter did not answer in {self.timeout_s:.1f} s")
            except _Status as exc:
                return Unreachable(f"OpenRouter answered {exc}")
            except httpx.HTTPError as exc:
                return Unreachable(f"OpenRouter unreachable: {exc!r}")
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                return Unreachable(f"OpenRouter answered an unreadable body: {exc!r}")

    async def _with_429_retry(self, call, pair: Pair, deadline: float | None) -> float:
        try:
            return await call(pair, deadline)
        except _Status as exc:
            if exc.status != 429:
                raise
        await asyncio.sleep(RETRY_429_AFTER_S)
        return await call(pair, deadline)

    def _timeout(self, deadline: float | None) -> float:
        timeout = self.timeout_s
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                raise DeadlineExceeded("the deadline passed before the OpenRouter call")
        return timeout

    async def _post(self, url: str, body: dict, deadline: float | None) -> Any:
        response = await self._client.post(
            url,
            json=body,
            timeout=self._timeout(deadline),
            headers={"Authorization": f"Bearer {self._key}", "X-Title": "Zocrates"},
        )
        if response.status_code != 200:
            raise _Status(response.status_code, response.text)
        return response.json()

    async def _decide(self, pair: Pair, deadline: float | None) -> float:
        body = await self._post(self.url, decision_body(pair, self.model), deadline)
        return _probability(body["answers"][QUESTION_ID]["noul"])

    async def _chat(self, pair: Pair, deadline: float | None) -> float:
        body = await self._post(self.chat_url, chat_body(pair, self.fallback_model), deadline)
        content = body["choices"][0]["message"]["content"]
        return _probability(json.loads(content)["probability"])

    async def close(self) -> None:
        await self._client.aclose()

    def health(self) -> dict[str, Any]:
        return {"loaded": bool(self._key), "mode": "chat" if self.decisions_missing else "decisions"}


def _probability(value: Any) -> float:
    p = float(value)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{p} is not a probability")
    return p
