"""Retries, backoff, the two kinds of 429, pacing, caching and offline failures of the shared HTTP path."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx
import pytest
import respx
from discovery.responses import BUDGET_429, THROTTLE_429

from zocrates_discovery.adapters.http import (
    BudgetExhausted,
    HostLimiter,
    HostPolicy,
    Http,
    Throttled,
    Unreachable,
    UpstreamError,
    UpstreamTimeout,
    budget_reset,
    retry_after,
)

URL = "https://api.openalex.org/works"


@pytest.fixture
async def client():
    async with httpx.AsyncClient() as c:
        yield c


def make(client, **kw) -> Http:
    fast = HostPolicy(rate_per_s=1_000, concurrency=8)
    return Http(
        client, **{"attempts": 3, "wait_initial": 0, "wait_max": 0, "cache_ttl": 0, "default_policy": fast, **kw}
    )


async def test_5xx_is_retried_until_it_succeeds(client):
    with respx.mock() as mock:
        route = mock.get(URL).mock(
            side_effect=[httpx.Response(502), httpx.Response(500), httpx.Response(200, json={"ok": 1})]
        )
        fetched = await make(client).get(URL)
    assert fetched.data == {"ok": 1} and route.call_count == 3


async def test_5xx_that_persists_is_an_upstream_error_after_the_allowed_attempts(client):
    with respx.mock() as mock:
        route = mock.get(URL).respond(503, json={"message": "busy"})
        with pytest.raises(UpstreamError, match="HTTP 503") as info:
            await make(client).get(URL)
    assert route.call_count == 3 and info.value.status == 503


async def test_throttling_429_waits_retry_after_and_slows_the_host(client):
    http = make(client)
    with respx.mock() as mock:
        route = mock.get(URL).mock(side_effect=[THROTTLE_429, httpx.Response(200, json={"ok": 1})])
        before = http.limiter("api.openalex.org").interval
        assert (await http.get(URL, budgeted=True)).data == {"ok": 1}
    assert route.call_count == 2
    assert http.limiter("api.openalex.org").interval == before * 2


async def test_budget_exhausted_429_is_not_retried_and_says_until_when(client):
    with respx.mock() as mock:
        route = mock.get(URL).mock(return_value=BUDGET_429)
        with pytest.raises(BudgetExhausted) as info:
            await make(client).get(URL, budgeted=True)
    assert route.call_count == 1
    assert str(info.value) == f"OpenAlex budget exhausted until {info.value.resets_at:%H:%M} UTC"


def test_budget_reset_is_midnight_utc_from_the_reset_header():
    now = datetime(2026, 8, 27, 17, 54, 14, tzinfo=UTC)
    request = httpx.Request("GET", URL)
    spent = httpx.Response(
        429,
        headers={
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Credits-Required": "10",
            "X-RateLimit-Reset": str(6 * 3600 + 5 * 60 + 46),
        },
        request=request,
    )
    assert budget_reset(spent, now) == datetime(2026, 8, 28, 0, 0, tzinfo=UTC)
    # Without the reset header the message alone identifies it; the budget returns at midnight UTC.
    by_message = httpx.Response(429, json={"message": "Insufficient budget. Resets at midnight UTC."}, request=request)
    assert budget_reset(by_message, now) == datetime(2026, 8, 28, 0, 0, tzinfo=UTC)
    assert budget_reset(THROTTLE_429, now) is None
    assert budget_reset(httpx.Response(200), now) is None


async def test_budget_rule_applies_only_where_asked(client):
    # Another API's 429 with a long Retry-After is a throttle we refuse to wait out, not a budget.
    with respx.mock() as mock:
        route = mock.get("https://api.crossref.org/works").respond(429, headers={"Retry-After": "3600"})
        with pytest.raises(Throttled, match="3600 s"):
            await make(client).get("https://api.crossref.org/works")
    assert route.call_count == 1


async def test_persistent_throttle_gives_up_with_a_clear_error(client):
    with respx.mock() as mock:
        mock.get(URL).mock(return_value=THROTTLE_429)
        with pytest.raises(Throttled, match="429"):
            await make(client).get(URL, budgeted=True)


async def test_openalex_query_timeout_504_is_not_retried(client):
    with respx.mock() as mock:
        route = mock.get(URL).respond(504, json={"error": "query_timeout", "message": "Query timed out"})
        with pytest.raises(UpstreamError):
            await make(client).get(URL)
    assert route.call_count == 1


async def test_other_4xx_are_not_retried(client):
    with respx.mock() as mock:
        route = mock.get(URL).respond(400, json={"error": "Invalid query parameters", "message": "bad filter"})
        with pytest.raises(UpstreamError, match="bad filter"):
            await make(client).get(URL)
    assert route.call_count == 1


async def test_404_is_none_and_cached(client):
    http = make(client, cache_ttl=60)
    with respx.mock() as mock:
        route = mock.get(URL).respond(404)
        assert await http.get(URL, params={"a": 1}) is None
        assert await http.get(URL, params={"a": 1}) is None
    assert route.call_count == 1


async def test_answers_are_cached_per_url_and_parameters_but_not_per_credentials(client):
    http = make(client, cache_ttl=60)
    with respx.mock() as mock:
        route = mock.get(URL).mock(side_effect=lambda r: httpx.Response(200, json={"q": r.url.params["q"]}))
        assert (await http.get(URL, params={"q": "a"}, headers={"Authorization": "Bearer 1"})).data == {"q": "a"}
        assert (await http.get(URL, params={"q": "a"}, headers={"Authorization": "Bearer 2"})).data == {"q": "a"}
        assert (await http.get(URL, params={"q": "b"})).data == {"q": "b"}
    assert route.call_count == 2


async def test_offline_is_unreachable_at_once(client):
    with respx.mock() as mock:
        route = mock.get(URL).mock(side_effect=httpx.ConnectError("[Errno -3] Temporary failure in name resolution"))
        with pytest.raises(Unreachable) as info:
            await make(client).get(URL)
    assert route.call_count == 1
    assert info.value.reason == "[Errno -3] Temporary failure in name resolution"


async def test_read_timeouts_are_retried_then_reported(client):
    with respx.mock() as mock:
        route = mock.get(URL).mock(side_effect=httpx.ReadTimeout("read timed out"))
        with pytest.raises(UpstreamTimeout):
            await make(client).get(URL)
    assert route.call_count == 3


async def test_non_json_answer_is_a_clear_error(client):
    with respx.mock() as mock:
        mock.get(URL).respond(200, text="<html>captcha</html>", headers={"content-type": "text/html"})
        with pytest.raises(UpstreamError, match="not JSON"):
            await make(client).get(URL)


def test_retry_after_reads_seconds_and_dates():
    assert retry_after(httpx.Response(429, headers={"Retry-After": "2"})) == 2.0
    assert retry_after(httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after(httpx.Response(429)) is None


async def test_limiter_spaces_request_starts():
    import time

    limiter = HostLimiter(HostPolicy(rate_per_s=50, concurrency=2))
    started = time.monotonic()
    for _ in range(6):
        async with limiter:
            pass
    assert time.monotonic() - started >= 5 / 50 * 0.9


async def test_post_bodies_are_part_of_the_cache_key(client):
    http = make(client, cache_ttl=60)
    with respx.mock() as mock:
        route = mock.post("https://api.semanticscholar.org/graph/v1/paper/batch").mock(
            side_effect=lambda r: httpx.Response(200, json=json.loads(r.content)["ids"])
        )
        assert (
            await http.request("POST", "https://api.semanticscholar.org/graph/v1/paper/batch", json_body={"ids": ["a"]})
        ).data == ["a"]
        assert (
            await http.request("POST", "https://api.semanticscholar.org/graph/v1/paper/batch", json_body={"ids": ["b"]})
        ).data == ["b"]
    assert route.call_count == 2
