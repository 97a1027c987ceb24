"""The one HTTP path every provider takes: per-host pacing, retries, a TTL cache, clear failures.

- Pacing: each host gets a request rate and a concurrency bound (OpenAlex allows far more than we
  use; Semantic Scholar without a key about one request a second). A throttling 429 halves that
  host's rate for the rest of the process ("retry with less concurrency").
- Retries (stamina): dropped connections, read timeouts, 5xx and throttling 429s, with
  exponential backoff, or exactly `Retry-After` when the server names it. Never retried: any
  other 4xx, a 504 `query_timeout` (the same query would time out again), a throttle that asks
  for a longer wait than `max_retry_after_s`, and OpenAlex's budget-exhausted 429, recognised by
  `X-RateLimit-Remaining` below `X-RateLimit-Credits-Required` or its "Insufficient budget"
  message: that budget only comes back at midnight UTC.
- Connection failures (DNS, refused, no route) are not retried: they mean this machine is
  offline, and the user is better served by being told so at once.
- Cache: successful answers (and 404s) per URL and parameters, for `cache_ttl_s`; credentials are
  never part of the key. Repeated discovery turns on one topic cost no credits.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import stamina
import structlog
from cachetools import TTLCache

log = structlog.get_logger("zocrates.discovery.http")

_RETRIED_STATUSES = {500, 502, 503, 504}


class ProviderError(Exception):
    """A provider could not answer; `str()` is a sentence fit for the user."""

    def __init__(self, host: str, message: str, reason: str | None = None):
        super().__init__(message)
        self.host = host
        self.reason = reason or message


class Unreachable(ProviderError):
    """The host could not be reached at all (offline, DNS, refused)."""


class UpstreamTimeout(ProviderError):
    """The host accepted the connection but did not answer in time, even after retries."""


class UpstreamError(ProviderError):
    """The host answered with an error status that retrying did not (or cannot) fix."""

    def __init__(self, host: str, status: int, message: str, body: Any = None):
        super().__init__(host, message)
        self.status = status
        self.body = body


class Throttled(UpstreamError):
    """The host kept answering 429 (or asked for a wait longer than we are willing to spend)."""


class BudgetExhausted(UpstreamError):
    """OpenAlex's daily budget is spent; it comes back at `resets_at`."""

    def __init__(self, host: str, resets_at: datetime, body: Any = None):
        super().__init__(host, 429, f"OpenAlex budget exhausted until {resets_at:%H:%M} UTC", body)
        self.resets_at = resets_at


@dataclass
class HostPolicy:
    """How hard one host may be asked: request starts per second and requests in flight."""

    rate_per_s: float
    concurrency: int = 4


class HostLimiter:
    """Spaces request starts to `rate_per_s` and bounds concurrency; `slow_down` halves the rate."""

    def __init__(self, policy: HostPolicy):
        self.interval = 1.0 / policy.rate_per_s
        self._slots = asyncio.Semaphore(policy.concurrency)
        self._lock = asyncio.Lock()
        self._next_start = 0.0

    async def __aenter__(self) -> None:
        await self._slots.acquire()
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)

    async def __aexit__(self, *exc: object) -> None:
        self._slots.release()

    def slow_down(self) -> None:
        self.interval = min(self.interval * 2, 5.0)


@dataclass
class Fetched:
    """A successful answer: the decoded body and the headers (for rate-limit accounting)."""

    status: int
    data: Any
    headers: dict[str, str] = field(default_factory=dict)


def _header_int(headers: httpx.Headers, name: str) -> float | None:
    try:
        return float(headers[name])
    except (KeyError, ValueError):
        return None


def budget_reset(response: httpx.Response, now: datetime | None = None) -> datetime | None:
    """When OpenAlex's daily budget comes back, if `response` is its budget-exhausted 429; else None.

    OpenAlex answers both a per-second throttle and a spent daily budget with 429. Only the
    latter has `X-RateLimit-Remaining` below `X-RateLimit-Credits-Required` (and says
    "Insufficient budget ... Resets at midnight UTC"); `X-RateLimit-Reset` counts the seconds.
    """
    if response.status_code != 429:
        return None
    remaining = _header_int(response.headers, "x-ratelimit-remaining")
    required = _header_int(response.headers, "x-ratelimit-credits-required")
    spent = remaining is not None and required is not None and remaining < required
    if not spent and "insufficient budget" not in response.text.lower():
        return None
    now = now or datetime.now(UTC)
    seconds = _header_int(response.headers, "x-ratelimit-reset")
    if seconds is not None:
        return (now + timedelta(seconds=seconds)).replace(second=0, microsecond=0)
    return (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


def retry_after(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (delta-seconds or an HTTP date), else None."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None


class _Retry(Exception):
    """Internal: a response worth another attempt, after `wait` seconds if given."""

    def __init__(self, response: httpx.Response, wait: float | None = None):
        super().__init__(f"HTTP {response.status_code}")
        self.response = response
        self.wait = wait


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:500]


class Http:
    """Shared async HTTP helper over one `httpx.AsyncClient` (owned by the caller)."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        policies: dict[str, HostPolicy] | None = None,
        default_policy: HostPolicy | None = None,
        attempts: int = 3,
        wait_initial: float = 0.5,
        wait_max: float = 8.0,
        max_retry_after: float = 20.0,
        cache_ttl: float = 3600.0,
        cache_size: int = 2048,
    ):
        self.client = client
        self._policies = policies or {}
        self._default_policy = default_policy or HostPolicy(rate_per_s=5.0)
        self._limiters: dict[str, HostLimiter] = {}
        self._attempts = attempts
        self._wait_initial = wait_initial
        self._wait_max = wait_max
        self._max_retry_after = max_retry_after
        self._cache: TTLCache | None = TTLCache(cache_size, cache_ttl) if cache_ttl > 0 else None

    def limiter(self, host: str) -> HostLimiter:
        if host not in self._limiters:
            self._limiters[host] = HostLimiter(self._policies.get(host, self._default_policy))
        return self._limiters[host]

    async def get(self, url: str, **kwargs: Any) -> Fetched | None:
        """GET `url`; see `request`."""
        return await self.request("GET", url, **kwargs)

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
        timeout: float | None = None,
        parse: str = "json",
        budgeted: bool = False,
    ) -> Fetched | None:
        """Send one request; the decoded body (`parse`: "json" or "text"), None on 404.

        Raises `Unreachable`, `UpstreamTimeout`, `Throttled`, `UpstreamError`, and, when
        `budgeted` (OpenAlex), `BudgetExhausted`.
        """
        host = urlsplit(url).hostname or url
        key = (method, url, tuple(sorted((params or {}).items())), json.dumps(json_body, sort_keys=True), parse)
        if self._cache is not None and key in self._cache:
            return self._cache[key]
        limiter = self.limiter(host)

        def on(exc: Exception) -> bool | float:
            if isinstance(exc, _Retry):
                return True if exc.wait is None else exc.wait
            return isinstance(
                exc,
                (
                    httpx.ReadTimeout,
                    httpx.WriteTimeout,
                    httpx.PoolTimeout,
                    httpx.RemoteProtocolError,
                    httpx.ReadError,
                    httpx.WriteError,
                ),
            )

        response: httpx.Response | None = None
        try:
            async for attempt in stamina.retry_context(
                on=on,
                attempts=self._attempts,
                timeout=None,
                wait_initial=self._wait_initial,
                wait_max=self._wait_max,
            ):
                with attempt:
                    async with limiter:
                        response = await self.client.request(
                            method,
                            url,
                            params=params,
                            headers=headers,
                            json=json_body,
                            timeout=timeout if timeout is not None else httpx.USE_CLIENT_DEFAULT,
                        )
                    self._check(response, host, limiter, budgeted)
        except _Retry as exc:
            response = exc.response
            status = response.status_code
            if status == 429:
                raise Throttled(
                    host,
                    429,
                    f"{host} kept refusing with 429 (too many requests); try again in a minute",
                    _body(response),
                ) from None
            raise UpstreamError(
                host, status, f"{host} answered HTTP {status} {_reason(response)}", _body(response)
            ) from None
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol) as exc:
            reason = _describe(exc)
            raise Unreachable(host, f"{host} is unreachable from this machine: {reason}", reason) from None
        except httpx.TimeoutException as exc:
            raise UpstreamTimeout(host, f"{host} did not answer in time ({_describe(exc)})") from None
        except httpx.TransportError as exc:
            reason = _describe(exc)
            raise Unreachable(host, f"the connection to {host} failed: {reason}", reason) from None

        assert response is not None
        if response.status_code == 404:
            fetched = None
        else:
            try:
                data = response.json() if parse == "json" else response.text
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise UpstreamError(
                    host,
                    response.status_code,
                    f"{host} answered with something that is not JSON ({response.headers.get('content-type')})",
                ) from None
            fetched = Fetched(response.status_code, data, dict(response.headers))
        if self._cache is not None:
            self._cache[key] = fetched
        return fetched

    def _check(self, response: httpx.Response, host: str, limiter: HostLimiter, budgeted: bool) -> None:
        """Raise for statuses that are not an answer; `_Retry` for the ones worth retrying."""
        status = response.status_code
        if status < 400 or status == 404:
            return
        if status == 429:
            if budgeted and (resets := budget_reset(response)) is not None:
                raise BudgetExhausted(host, resets, _body(response))
            wait = retry_after(response)
            if wait is not None and wait > self._max_retry_after:
                raise Throttled(
                    host,
                    429,
                    f"{host} asks to wait {wait:.0f} s before the next request (rate limit); try again later",
                    _body(response),
                )
            limiter.slow_down()
            log.info("throttled", host=host, retry_after=wait)
            raise _Retry(response, wait)
        if status in _RETRIED_STATUSES and not (status == 504 and "query_timeout" in response.text):
            raise _Retry(response, retry_after(response) if status == 503 else None)
        raise UpstreamError(host, status, f"{host} answered HTTP {status} {_reason(response)}", _body(response))


def _reason(response: httpx.Response) -> str:
    body = _body(response)
    if isinstance(body, dict):
        detail = body.get("message") or body.get("error") or body.get("detail")
        if detail:
            return f"({str(detail)[:200]})"
    return f"({response.reason_phrase})" if response.reason_phrase else ""


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
