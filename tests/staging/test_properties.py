"""Property tests (hypothesis) for the address classifier, the host parser and the PDF sniffer."""

from __future__ import annotations

import asyncio
import ipaddress
import tempfile
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zocrates_staging.adapters.download import PDF_MAGIC, SNIFF_WINDOW, Rejected, download_pdf, make_client
from zocrates_staging.adapters.guard import _BLOCKED, BlockedRequest, blocked_reason, parse_ip_host

pytestmark = pytest.mark.fuzz

v4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)
v6 = st.integers(0, 2**128 - 1).map(ipaddress.IPv6Address)
blocked_v4 = (
    st.sampled_from([n for n, _ in _BLOCKED if n.version == 4])
    .flatmap(lambda n: st.integers(int(n.network_address), int(n.broadcast_address)))
    .map(ipaddress.IPv4Address)
)
blocked_v6 = (
    st.sampled_from([n for n, _ in _BLOCKED if n.version == 6])
    .flatmap(lambda n: st.integers(int(n.network_address), int(n.broadcast_address)))
    .map(ipaddress.IPv6Address)
)


@given(st.one_of(v4, v6))
def test_an_allowed_address_is_global_unicast(ip):
    if blocked_reason(ip) is None:
        target = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip
        assert target.is_global and not target.is_multicast
        assert not (target.is_private or target.is_loopback or target.is_link_local)


@given(st.one_of(blocked_v4, blocked_v6))
def test_every_address_in_a_blocked_range_is_refused(ip):
    assert blocked_reason(ip)


@given(v4)
def test_a_mapped_address_is_judged_as_its_ipv4(ip):
    mapped = ipaddress.IPv6Address(f"::ffff:{ip}")
    assert (blocked_reason(mapped) is None) == (blocked_reason(ip) is None)


@given(v4)
def test_nat64_and_6to4_embeddings_are_refused_even_of_public_addresses(ip):
    packed = int(ip)
    assert blocked_reason(ipaddress.IPv6Address((0x64FF9B << 96) | packed))
    assert blocked_reason(ipaddress.IPv6Address((0x2002 << 112) | (packed << 80)))


def _forms(ip: ipaddress.IPv4Address) -> st.SearchStrategy[str]:
    """Every inet_aton spelling of `ip`: 1 to 4 parts, each decimal, octal or hex."""
    value = int(ip)
    a, b, c, d = ip.packed

    def spell(n: int, style: str) -> str:
        return {"dec": str(n), "oct": "0" + format(n, "o"), "hex": "0x" + format(n, "x")}[style]

    splits = [[value], [a, value & 0xFFFFFF], [a, b, value & 0xFFFF], [a, b, c, d]]
    return st.sampled_from(splits).flatmap(
        lambda parts: st.lists(st.sampled_from(["dec", "oct", "hex"]), min_size=len(parts), max_size=len(parts)).map(
            lambda styles: ".".join(spell(p, s) for p, s in zip(parts, styles))
        )
    )


@given(v4.flatmap(lambda ip: st.tuples(st.just(ip), _forms(ip))))
def test_every_numeric_spelling_decodes_to_the_same_address(case):
    ip, spelled = case
    assert parse_ip_host(spelled) == ip


@given(st.text(alphabet="0123456789abcdefxX.:[]%-", max_size=40))
def test_the_host_parser_answers_or_refuses_never_crashes(host):
    try:
        result = parse_ip_host(host)
    except BlockedRequest as exc:
        assert exc.reason
    else:
        assert result is None or isinstance(result, (ipaddress.IPv4Address, ipaddress.IPv6Address))


# --- the PDF sniffer ----------------------------------------------------------------------------

junk = st.binary(max_size=3000).map(lambda b: b.replace(PDF_MAGIC, b"%PDF_"))


@given(junk)
def test_a_body_without_the_magic_is_refused(body):
    from zocrates_staging.adapters.download import sniff_pdf

    assert sniff_pdf(body)


@given(st.binary(max_size=SNIFF_WINDOW - len(PDF_MAGIC)), st.binary(max_size=2000))
def test_the_magic_within_the_window_is_accepted(prefix, rest):
    from zocrates_staging.adapters.download import sniff_pdf

    assert sniff_pdf(prefix + PDF_MAGIC + rest) is None


@given(st.integers(SNIFF_WINDOW - len(PDF_MAGIC) + 1, 4000))
def test_the_magic_past_the_window_is_refused(offset):
    from zocrates_staging.adapters.download import sniff_pdf

    assert sniff_pdf(b" " * offset + PDF_MAGIC + b"1.7\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.one_of(
        junk, st.tuples(st.binary(max_size=1100), st.binary(max_size=3000)).map(lambda t: t[0] + PDF_MAGIC + t[1])
    ),
    cuts=st.lists(st.integers(1, 700), max_size=12),
)
def test_a_streamed_download_agrees_with_the_sniffer_whatever_the_chunking(body, cuts):
    """However the network splits the body, download and sniffer reach the same verdict."""
    from zocrates_staging.adapters.download import sniff_pdf

    pieces, rest = [], body
    for cut in cuts:
        pieces.append(rest[:cut])
        rest = rest[cut:]
    pieces.append(rest)

    async def stream():
        for piece in pieces:
            yield piece

    async def fetch(work: Path):
        transport = httpx.MockTransport(lambda request: httpx.Response(200, content=stream()))
        async with make_client(transport=transport, resolver=lambda host, port: _answer("93.184.215.14")) as client:
            return await download_pdf(
                client, "http://pdfs.example/p.pdf", work, max_bytes=1 << 20, max_redirects=0, total_timeout=5
            )

    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = asyncio.run(fetch(Path(tmp)))
        except Rejected:
            assert sniff_pdf(body) is not None
            assert list(Path(tmp).iterdir()) == []
        else:
            assert sniff_pdf(body) is None
            assert done.path.read_bytes() == body


async def _answer(address: str) -> list[str]:
    return [address]
