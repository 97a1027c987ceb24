"""S-SSRF-2 (redirect chains) and S-SSRF-3 (DNS rebinding, pinning) with a MockTransport.

The MockTransport stands where the network would be, behind the guard, so the tests see
exactly the request the guard lets out: which IP, which Host header, which TLS name.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest
from staging.loopback import SMALL_PDF
from staging.support import PUBLIC_V4, PUBLIC_V6, FakeResolver, leftovers

from zocrates_staging.adapters.download import Rejected, download_pdf, make_client


def recording_transport(routes: dict[str, Callable[[], httpx.Response]]):
    """A MockTransport answering by path, keeping every request it was handed."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return routes.get(request.url.path, lambda: httpx.Response(404))()

    return httpx.MockTransport(handler), seen


def redirect_to(location: str) -> Callable[[], httpx.Response]:
    return lambda: httpx.Response(302, headers={"Location": location})


def pdf(body: bytes = SMALL_PDF) -> Callable[[], httpx.Response]:
    """A streamed body, as the network gives (bytes content would arrive already read)."""

    async def stream():
        yield body

    return lambda: httpx.Response(200, content=stream())


async def fetch(client, url, work_dir, max_redirects=5):
    return await download_pdf(client, url, work_dir, max_bytes=1 << 20, max_redirects=max_redirects, total_timeout=5)


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("http://127.0.0.1/x.pdf", "loopback"),
        ("http://169.254.169.254/latest/meta-data/iam", "link-local"),
        ("http://[::1]/x.pdf", "loopback"),
        ("http://internal.example/x.pdf", "RFC 1918"),
        ("http://2130706433/x.pdf", "loopback"),
        ("file:///etc/passwd", "scheme"),
        ("http://public.example:8080/x.pdf", "port 8080"),
    ],
)
async def test_redirect_to_a_private_address_is_blocked_at_that_hop(location, expected, work_dir, record_property):
    transport, seen = recording_transport({"/paper.pdf": redirect_to(location)})
    resolver = FakeResolver({"public.example": [PUBLIC_V4], "internal.example": ["10.9.8.7"]})
    async with make_client(transport=transport, resolver=resolver) as client:
        with pytest.raises(Rejected) as caught:
            await fetch(client, "https://public.example/paper.pdf", work_dir)
    reason = caught.value.reason
    record_property("blocked_at", reason)
    assert "redirect hop 1" in reason and expected.lower() in reason.lower(), reason
    assert [r.url.host for r in seen] == [PUBLIC_V4]  # only the public first hop went out
    assert leftovers(work_dir) == []


async def test_a_chain_through_public_hosts_is_followed(work_dir):
    routes = {"/a": redirect_to("https://b.example/b"), "/b": redirect_to("/c.pdf"), "/c.pdf": pdf()}
    transport, seen = recording_transport(routes)
    resolver = FakeResolver({"a.example": [PUBLIC_V4], "b.example": ["1.1.1.1"]})
    async with make_client(transport=transport, resolver=resolver) as client:
        done = await fetch(client, "https://a.example/a", work_dir)
    assert done.redirects == 2 and done.final_url == "https://b.example/c.pdf"
    assert done.path.read_bytes() == SMALL_PDF
    assert [(r.url.host, r.headers["host"]) for r in seen] == [
        (PUBLIC_V4, "a.example"),
        ("1.1.1.1", "b.example"),
        ("1.1.1.1", "b.example"),
    ]
    assert resolver.calls == ["a.example", "b.example", "b.example"]  # every hop re-checked


async def test_the_hop_limit_is_enforced(work_dir):
    routes = {f"/{i}": redirect_to(f"/{i + 1}") for i in range(10)}
    transport, seen = recording_transport(routes)
    resolver = FakeResolver({"loop.example": [PUBLIC_V4]})
    async with make_client(transport=transport, resolver=resolver) as client:
        with pytest.raises(Rejected, match="more than 5 redirects"):
            await fetch(client, "http://loop.example/0", work_dir)
    assert len(seen) == 6  # the first request and 5 followed hops, no more


async def test_dns_rebinding_the_connection_goes_to_the_validated_ip(work_dir, record_property):
    """The resolver answers public first and private after: it is asked once per request,
    and the request that leaves carries the checked IP, the real Host and the real TLS name."""
    transport, seen = recording_transport({"/p.pdf": pdf()})
    resolver = FakeResolver({"rebind.example": [[PUBLIC_V4], ["127.0.0.1"]]})
    async with make_client(transport=transport, resolver=resolver) as client:
        await fetch(client, "https://rebind.example/p.pdf", work_dir)
    record_property("resolutions_per_request", len(resolver.calls))
    assert resolver.calls == ["rebind.example"]
    (sent,) = seen
    assert sent.url.host == PUBLIC_V4
    assert sent.url.scheme == "https" and sent.url.port is None
    assert sent.headers["host"] == "rebind.example"
    assert sent.extensions["sni_hostname"] == "rebind.example"


async def test_ipv6_answers_are_pinned_too(work_dir):
    transport, seen = recording_transport({"/p.pdf": pdf()})
    resolver = FakeResolver({"v6.example": [PUBLIC_V6]})
    async with make_client(transport=transport, resolver=resolver) as client:
        await fetch(client, "https://v6.example/p.pdf", work_dir)
    assert seen[0].url.host == PUBLIC_V6 and seen[0].headers["host"] == "v6.example"


async def test_mixed_answers_are_refused_whatever_their_order(work_dir):
    transport, seen = recording_transport({"/p.pdf": pdf()})
    resolver = FakeResolver(
        {"mixed.example": [PUBLIC_V4, "10.0.0.1"], "mixed2.example": ["169.254.169.254", PUBLIC_V4]}
    )
    async with make_client(transport=transport, resolver=resolver) as client:
        for host in ("mixed.example", "mixed2.example"):
            with pytest.raises(Rejected, match="blocked"):
                await fetch(client, f"https://{host}/p.pdf", work_dir)
    assert seen == []


async def test_a_refused_connection_moves_to_the_next_checked_address(work_dir):
    attempts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request.url.host)
        if request.url.host == PUBLIC_V4:
            raise httpx.ConnectError("connection refused")
        return pdf()()

    resolver = FakeResolver({"two.example": [PUBLIC_V4, "1.1.1.1"]})
    async with make_client(transport=httpx.MockTransport(handler), resolver=resolver) as client:
        await fetch(client, "http://two.example/p.pdf", work_dir)
    assert attempts == [PUBLIC_V4, "1.1.1.1"]


def test_the_client_ignores_environment_proxies(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:3128")
    client = make_client()
    assert client._trust_env is False
    assert not client._mounts  # no proxy transport could take over from the guard


async def test_an_international_name_is_resolved_and_verified_in_its_idna_form(work_dir):
    transport, seen = recording_transport({"/p.pdf": pdf()})
    resolver = FakeResolver({"xn--bcher-kva.example": [PUBLIC_V4]})
    async with make_client(transport=transport, resolver=resolver) as client:
        await fetch(client, "https://bücher.example/p.pdf", work_dir)
    assert resolver.calls == ["xn--bcher-kva.example"]
    assert seen[0].extensions["sni_hostname"] == "xn--bcher-kva.example"
    assert seen[0].headers["host"] == "xn--bcher-kva.example"
