"""S-SSRF-1: the address matrix. Every URL is refused before any connection is made.

The loopback server listens on the port each URL names, and nothing is allowlisted, so a URL
that slipped through the guard would show up in its connection count.
"""

from __future__ import annotations

import ipaddress

import pytest
from staging.support import PUBLIC_V4, PUBLIC_V6, FakeResolver, leftovers

from zocrates_staging.adapters.download import Rejected, download_pdf, make_client
from zocrates_staging.adapters.guard import BlockedRequest, blocked_reason, parse_ip_host

#: Host names for the matrix; everything else fails to resolve.
DNS = {
    "localhost": ["127.0.0.1", "::1"],
    "internal.example": ["10.0.0.5"],
    "metadata.example": ["169.254.169.254"],
    "v6-loopback.example": ["::1"],
    "mixed.example": [PUBLIC_V4, "192.168.1.20"],
    "mixed6.example": [PUBLIC_V6, "fd00::1"],
    "mapped.example": ["::ffff:127.0.0.1"],
    "public.example": [PUBLIC_V4],
}

#: (URL template, what the reason must mention). `{p}` is the loopback server's port.
MATRIX = [
    ("http://127.0.0.1:{p}/x.pdf", "loopback"),
    ("http://127.9.9.9:{p}/x.pdf", "loopback"),
    ("http://localhost:{p}/x.pdf", "loopback"),
    ("http://LOCALHOST.:{p}/x.pdf", "loopback"),
    ("http://[::1]:{p}/x.pdf", "loopback"),
    ("http://0.0.0.0:{p}/x.pdf", "this network"),
    ("http://0:{p}/x.pdf", "this network"),
    ("http://[::]:{p}/x.pdf", "unspecified"),
    ("http://169.254.169.254:{p}/latest/meta-data/", "link-local"),
    ("http://metadata.example:{p}/latest/meta-data/", "link-local"),
    ("http://[::ffff:127.0.0.1]:{p}/x.pdf", "IPv4-mapped"),
    ("http://[::ffff:169.254.169.254]:{p}/x.pdf", "IPv4-mapped"),
    ("http://mapped.example:{p}/x.pdf", "IPv4-mapped"),
    ("http://2130706433:{p}/x.pdf", "loopback"),
    ("http://0x7f.1:{p}/x.pdf", "loopback"),
    ("http://017700000001:{p}/x.pdf", "loopback"),
    ("http://0x7f000001:{p}/x.pdf", "loopback"),
    ("http://127.1:{p}/x.pdf", "loopback"),
    ("http://0177.0.0.1:{p}/x.pdf", "IPv4"),  # httpx itself refuses this one
    ("http://10.0.0.1:{p}/x.pdf", "RFC 1918"),
    ("http://172.16.5.4:{p}/x.pdf", "RFC 1918"),
    ("http://172.31.255.255:{p}/x.pdf", "RFC 1918"),
    ("http://192.168.0.1:{p}/x.pdf", "RFC 1918"),
    ("http://internal.example:{p}/x.pdf", "RFC 1918"),
    ("http://100.64.0.1:{p}/x.pdf", "carrier-grade NAT"),
    ("http://100.127.255.254:{p}/x.pdf", "carrier-grade NAT"),
    ("http://224.0.0.1:{p}/x.pdf", "multicast"),
    ("http://255.255.255.255:{p}/x.pdf", "reserved"),
    ("http://192.0.2.10:{p}/x.pdf", "documentation"),
    ("http://198.18.0.1:{p}/x.pdf", "benchmarking"),
    ("http://[fc00::1]:{p}/x.pdf", "unique local"),
    ("http://[fd12:3456::1]:{p}/x.pdf", "unique local"),
    ("http://[fe80::1]:{p}/x.pdf", "link-local"),
    ("http://[ff02::1]:{p}/x.pdf", "multicast"),
    ("http://[64:ff9b::a00:1]:{p}/x.pdf", "NAT64"),
    ("http://[64:ff9b::7f00:1]:{p}/x.pdf", "NAT64"),
    ("http://[2002:a00:1::]:{p}/x.pdf", "6to4"),
    ("http://[2001:db8::1]:{p}/x.pdf", "documentation"),
    ("http://v6-loopback.example:{p}/x.pdf", "loopback"),
    ("http://mixed.example:{p}/x.pdf", "RFC 1918"),
    ("http://mixed6.example:{p}/x.pdf", "unique local"),
    ("http://user@127.0.0.1:{p}/x.pdf", "credentials"),
    ("http://user:secret@public.example:{p}/x.pdf", "credentials"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://127.0.0.1:{p}/_x", "scheme"),
    ("ftp://public.example/x.pdf", "scheme"),
    ("http://public.example:22/x.pdf", "port 22"),
    ("http://1.2.3.4.5:{p}/x.pdf", "valid IPv4"),
    ("http://nowhere.invalid:{p}/x.pdf", "could not resolve"),
]


async def test_address_matrix_is_refused_before_any_connection(server, work_dir, record_property):
    resolver = FakeResolver(DNS)
    client = make_client(resolver=resolver, allowed_ports=[80, 443, server.port])
    refused = []
    try:
        for template, expected in MATRIX:
            url = template.format(p=server.port)
            with pytest.raises(Rejected) as caught:
                await download_pdf(client, url, work_dir, max_bytes=1 << 20, max_redirects=5, total_timeout=5)
            assert expected.lower() in caught.value.reason.lower(), (url, caught.value.reason)
            refused.append(url)
    finally:
        await client.aclose()
    record_property("blocked", f"{len(refused)}/{len(MATRIX)}")
    record_property("server_hits", server.connections)
    assert len(refused) == len(MATRIX) >= 40
    assert server.connections == 0
    assert leftovers(work_dir) == []


async def test_the_same_server_is_reached_once_allowlisted(server, work_dir):
    """The control for the matrix: the guard, not a broken setup, kept the server unreached."""
    from staging.loopback import SMALL_PDF, respond

    server.routes["/x.pdf"] = respond(SMALL_PDF)
    client = make_client(allowed_ports=[server.port], allow_addresses=[ipaddress.ip_address("127.0.0.1")])
    try:
        done = await download_pdf(
            client, server.url("/x.pdf"), work_dir, max_bytes=1 << 20, max_redirects=0, total_timeout=5
        )
    finally:
        await client.aclose()
    assert server.connections == 1
    assert done.path.read_bytes() == SMALL_PDF


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        PUBLIC_V4,
        "2606:4700:4700::1111",
        PUBLIC_V6,
        "::ffff:8.8.8.8",
    ],
)
def test_public_addresses_pass(address):
    assert blocked_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.20.0.1",
        "192.168.255.255",
        "169.254.169.254",
        "100.64.0.0",
        "0.0.0.0",
        "0.1.2.3",
        "240.0.0.1",
        "203.0.113.7",
        "198.51.100.1",
        "192.0.0.8",
        "::1",
        "::",
        "fc00::",
        "fe80::1",
        "fec0::1",
        "64:ff9b::a00:1",
        "64:ff9b:1::1",
        "2002:a00:1::",
        "2001::1",
        "2001:db8::",
        "100::1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "ff0e::1",
    ],
)
def test_non_public_addresses_are_named(address):
    assert blocked_reason(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7F000001", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("10.1", "10.0.0.1"),
        ("192.168.1", "192.168.0.1"),
        ("0", "0.0.0.0"),
        ("8.8.8.8", "8.8.8.8"),
        ("8.8.8.8.", "8.8.8.8"),
        ("::1", "::1"),
        ("[::1]", "::1"),
    ],
)
def test_numeric_hosts_are_decoded_like_inet_aton(host, expected):
    assert parse_ip_host(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize("host", ["example.org", "arxiv.org", "1e100.net", "a-1.b2.example"])
def test_names_are_left_to_dns(host):
    assert parse_ip_host(host) is None


@pytest.mark.parametrize(
    "host", ["1.2.3.4.5", "256.1.1.1", "08.1", "1.2.3.0x100", "a.123", "4294967296", "0x1.0x2.0x3.0x4.0x5", "1::2::3"]
)
def test_malformed_numeric_hosts_are_refused(host):
    with pytest.raises(BlockedRequest):
        parse_ip_host(host)
