"""Streaming chat completions from any OpenAI-compatible endpoint (the adapter at the edge)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx

from zocrates_gateway.config import GatewaySettings


class LLMError(Exception):
    pass


async def stream_chat(
    settings: GatewaySettings, messages: list[dict], *, client: httpx.AsyncClient | None = None
) -> AsyncIterator[str]:
    """Yield text deltas of one streamed completion; `LLMError` with a readable reason (an HTTP
    error, an unreachable endpoint, or a stream cut before `[DONE]` or a finish_reason)."""
    assert settings.llm_url
    headers = {"Content-Type": "application/json"}
    if settings.llm_api_key:
        headers["Authorization"] = f"Bearer {settings.llm_api_key.get_secret_value()}"
    body = {"model": settings.llm_model, "messages": messages, "stream": True, "temperature": 0.2}
    url = settings.llm_url.rstrip("/") + "/chat/completions"
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
        raise LLMError(f"LLM endpoint {settings.llm_url} unreachable: {exc}") from exc
    except httpx.HTTPError as exc:  # a read timeout, a connection cut mid-stream
        raise LLMError(f"LLM endpoint {settings.llm_url} failed mid-answer ({type(exc).__name__}: {exc})") from exc
    finally:
        if owns:
            await client.aclose()
