"""Streaming chat completions from any OpenAI-compatible endpoint (the adapter at the edge)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from zocrates_gateway.config import Endpoint


class LLMError(Exception):
    pass


async def stream_chat(
    endpoint: Endpoint, messages: list[dict], *, client: httpx.AsyncClient | None = None
) -> AsyncIterator[str]:
    """Yield text deltas of one streamed completion; `LLMError` with a readable reason (an HTTP
    error, an unreachable endpoint, or a stream cut before `[DONE]` or a finish_reason)."""
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key.get_secret_value()}"
    body = {"model": endpoint.model, "messages": messages, "stream": True, "temperature": 0.2}
    url = endpoint.url.rstrip("/") + "/chat/completions"
    owns = client is None
    client = client or httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=60.0))
    finished = False  # a stream that ends without `[DONE]` or a finish_reason was cut
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code >= 400:
                detail = (await response.aread()).decode(errors="replace")[:300]
                raise LLMError(f"LLM endpoint answered HTTP {response.status_code}: {detail}")
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    finished = True
                    break
                try:
                    choice = json.loads(data)["choices"][0]
                except (json.JSONDecodeError, KeyError, IndexError, TypeError):
                    continue
                text = (choice.get("delta") or {}).get("content")
                if text:
                    yield text
                finished = finished or bool(choice.get("finish_reason"))
        if not finished:
            raise LLMError("LLM endpoint's stream ended before the answer was finished")
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise LLMError(f"LLM endpoint {endpoint.url} unreachable: {exc}") from exc
    except httpx.HTTPError as exc:  # a read timeout, a connection cut mid-stream
        raise LLMError(f"LLM endpoint {endpoint.url} failed mid-answer ({type(exc).__name__}: {exc})") from exc
    finally:
        if owns:
            await client.aclose()


T = TypeVar("T", bound=BaseModel)
_JSON_RE = re.compile(r"\{.*\}", re.DOTALL)


async def ask_json(endpoint: Endpoint, messages: list[dict], shape: type[T], timeout: float) -> T:
    """One completion read as a JSON object of `shape` (the first `{...}` in the text, so that a
    model wrapping it in prose or a code fence still counts); `LLMError` when the model fails,
    times out or answers anything else."""
    try:
        async with asyncio.timeout(timeout):
            text = "".join([piece async for piece in stream_chat(endpoint, messages)])
    except TimeoutError:
        raise LLMError(f"LLM endpoint {endpoint.url} gave no answer within {timeout:.0f} s") from None
    found = _JSON_RE.search(text)
    try:
        return shape.model_validate_json(found.group(0) if found else text)
    except ValidationError as exc:
        raise LLMError(f"LLM endpoint {endpoint.url} answered no valid {shape.__name__}: {text[:200]!r}") from exc
