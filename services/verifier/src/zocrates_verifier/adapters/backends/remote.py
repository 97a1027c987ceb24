"""A remote `/v1/systemone/batch` server (Laya's `laya-serve` or any Jev-compatible one).

All pairs that share a question go in one round trip (`states` x one `noul` question); a
request mixing single and compound occurrences sends its two groups concurrently, because a
batch shares one question set and asking both questions of every state would double the
remote's work. Groups larger than `max_states` (laya-serve caps 64) are split into
concurrent requests. Any failure fails open: those pairs get `Unreachable` or
`DeadlineExceeded`, never an exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from zocrates_verifier.adapters.backends.base import (
    Backend,
    DeadlineExceeded,
    Outcome,
    Pair,
    PredictFailed,
    Unreachable,
)

QUESTION_ID = "support"


def batch_body(pairs: Sequence[Pair], model: str = "") -> dict[str, Any]:
    """The Jev/Laya batch request for pairs that share one question."""
    body: dict[str, Any] = {
        "states": [{"source_text": p.source_text, "claim": p.claim} for p in pairs],
        "questions": {QUESTION_ID: {"type": "noul", "instructions": pairs[0].question}},
    }
    if model:
        body["model"] = model
    return body


def read_noul(answer_set: Any) -> float:
    """The `noul` probability of our question in one result's `answers`."""
    value = float(answer_set["answers"][QUESTION_ID]["noul"])
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"noul {value} is not a probability")
    return value


class RemoteBackend(Backend):
    """Forwards to `{url}/batch`; `url` is the server's `/v1/systemone` address."""

    provider = "remote"

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        model: str = "",
        timeout_s: float = 10.0,
        max_states: int = 64,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model or "remote-default"
        self._model_param = model
        self.device = "remote"
        self.timeout_s = timeout_s
        self.max_states = max_states
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.AsyncClient()
        self._reachable: bool | None = None
        self._remote_health: dict[str, Any] = {}

    async def start(self) -> None:
        # Reported, not required: a server that comes up later is used when it answers, and
        # until then every pair fails open.
        parts = urlsplit(self.url)
        try:
            response = await self._client.get(
                f"{parts.scheme}://{parts.netloc}/health", headers=self._headers, timeout=min(self.timeout_s, 3.0)
            )
            body = response.json() if response.status_code == 200 else {}
            self._reachable = isinstance(body, dict) and body.get("status") == "ok"
            self._remote_health = body if self._reachable else {}
        except (httpx.HTTPError, ValueError):
            self._reachable = False

    async def score(self, pairs: Sequence[Pair], deadline: float | None) -> list[Outcome]:
        out: list[Outcome] = [PredictFailed("not scored")] * len(pairs)
        jobs = []
        for compound in (False, True):
            idx = [i for i, p in enumerate(pairs) if p.compound == compound]
            for start in range(0, len(idx), self.max_states):
                jobs.append(idx[start : start + self.max_states])
        results = await asyncio.gather(*(self._post([pairs[i] for i in job], deadline) for job in jobs))
        for job, outcomes in zip(jobs, results):
            for i, outcome in zip(job, outcomes):
                out[i] = outcome
        return out

    async def _post(self, pairs: list[Pair], deadline: float | None) -> list[Outcome]:
        timeout = self.timeout_s
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                return [DeadlineExceeded("the deadline passed before the remote call")] * len(pairs)
        try:
            response = await self._client.post(
                f"{self.url}/batch", json=batch_body(pairs, self._model_param), headers=self._headers, timeout=timeout
            )
        except httpx.TimeoutException:
            self._reachable = True
            return [DeadlineExceeded(f"{self.url}/batch did not answer in {timeout:.1f} s")] * len(pairs)
        except httpx.HTTPError as exc:
            self._reachable = False
            return [Unreachable(f"{self.url}/batch unreachable: {exc!r}")] * len(pairs)
        self._reachable = True
        if response.status_code != 200:
            return [Unreachable(f"{self.url}/batch answered HTTP {response.status_code}: {response.text[:200]}")] * len(
                pairs
            )
        try:
            results = response.json()["results"]
            if len(results) != len(pairs):
                raise ValueError(f"{len(results)} results for {len(pairs)} states")
        except (ValueError, KeyError, TypeError) as exc:
            return [Unreachable(f"{self.url}/batch answered an unreadable body: {exc}")] * len(pairs)
        outcomes: list[Outcome] = []
        for result in results:
            try:
                outcomes.append(read_noul(result))
            except (ValueError, KeyError, TypeError) as exc:
                outcomes.append(Unreachable(f"unreadable answer from {self.url}: {exc!r}"))
        return outcomes

    async def close(self) -> None:
        await self._client.aclose()

    def health(self) -> dict[str, Any]:
        return {
            "loaded": bool(self._reachable),
            "remote_url": self.url,
            "remote_device": self._remote_health.get("device"),
        }
