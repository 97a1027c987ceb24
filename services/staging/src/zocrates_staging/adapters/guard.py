"""The SSRF guard: an httpx transport that only connects to public addresses.

Written in-house because `advocate` is archived (RELIABILITY.md §3); the design is the one
recent public fixes converge on. For every request, including each redirect hop (httpx calls
the transport once per hop):

1. only `http`/`https`, an allowed port (80 and 443 by default), no userinfo;
2. the host is resolved exactly once; if ANY answer is not a global unicast address the
   request is refused, so a mixed A/AAAA answer cannot smuggle a private address through;
3. the connection is pinned to a checked address: the URL host becomes the IP, the `Host`
   header keeps the name and the `sni_hostname` extension makes TLS verify the real name, so
   a second (rebinding) DNS answer is never asked for.

Numeric hosts are decoded the way `inet_aton` would (`2130706433`, `0x7f.1`, `017700000001`)
and checked without DNS; IPv4-mapped IPv6 addresses are decoded and the IPv4 address checked.
The client must use `trust_env=False`, or an environment proxy would replace this transport.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Union

import httpx

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

#: `resolver(host, port)` -> the addresses `host` resolves to (strings), as getaddrinfo gives.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

DEFAULT_PORTS = {"http": 80, "https": 443}

# Every range that is not a public destination, with the name used in refusal reasons.
# The final rule (`not is_global`, and IPv6 outside 2000::/3) catches anything missed here.
_BLOCKED: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(net), name)
    for net, name in (
        ("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
        ("10.0.0.0/8", "private (RFC 1918)"),
        ("100.64.0.0/10", "carrier-grade NAT (100.64/10)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local (cloud metadata lives at 169.254.169.254)"),
        ("172.16.0.0/12", "private (RFC 1918)"),
        ("192.0.0.0/24", "IETF protocol assignments"),
        ("192.0.2.0/24", "documentation (TEST-NET-1)"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private (RFC 1918)"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation (TEST-NET-2)"),
        ("203.0.113.0/24", "documentation (TEST-NET-3)"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b::/96", "NAT64 (64:ff9b::/96)"),
        ("64:ff9b:1::/48", "local NAT64"),
        ("100::/64", "discard-only"),
        ("2001::/32", "Teredo"),
        ("2001:10::/28", "ORCHID"),
        ("2001:20::/28", "ORCHIDv2"),
        ("2001:db8::/32", "documentation"),
        ("2002::/16", "6to4 (2002::/16)"),
        ("3fff::/20", "documentation"),
        ("fc00::/7", "unique local (fc00::/7)"),
        ("fe80::/10", "link-local (fe80::/10)"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")


class BlockedRequest(Exception):
    """The guard refused a request before connecting; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def blocked_reason(ip: IPAddress) -> str | None:
    """Why `ip` is not a public destination, or None when it is global unicast."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d reaches a.b.c.d: judge that
            inner = blocked_reason(ip.ipv4_mapped)
            return f"{ip} is IPv4-mapped: {inner}" if inner else None
        if ip.scope_id:
            return f"{ip} is a scoped address"
    for network, name in _BLOCKED:
        if ip.version == network.version and ip in network:
            return f"{ip} is in a blocked range: {name}"
    if isinstance(ip, ipaddress.IPv6Address) and ip not in _GLOBAL_UNICAST_V6:
        return f"{ip} is outside IPv6 global unicast (2000::/3)"
    if not ip.is_global:
        return f"{ip} is not a global address"
    return None


_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$", re.IGNORECASE)


def _ipv4_part(text: str) -> int:
    if text[:2].lower() == "0x":
        return int(text[2:] or "0", 16)
    if len(text) > 1 and text[0] == "0":
        return int(text, 8)  # raises on 8 or 9, as inet_aton refuses them
    return int(text)


def parse_ip_host(host: str) -> IPAddress | None:
    """The address a URL host denotes without DNS, or None for a name to resolve.

    Follows the WHATWG URL rule: a host whose last label is a number is an IPv4 address in
    one of the inet_aton forms (`a`, `a.b`, `a.b.c`, `a.b.c.d`, each part decimal, octal with a
    leading 0, or hex with 0x), or is invalid. Raises BlockedRequest for an invalid one.
    """
    host = host.strip("[]")
    if ":" in host:
        try:
            return ipaddress.IPv6Address(host.replace("%25", "%"))
        except ValueError:
            raise BlockedRequest(f"{host!r} is not a valid IPv6 address") from None
    labels = host.rstrip(".").split(".")
    if not _NUMERIC_LABEL.match(labels[-1]):
        return None
    try:
        if len(labels) > 4 or not all(_NUMERIC_LABEL.match(label) for label in labels):
            raise ValueError
        parts = [_ipv4_part(label) for label in labels]
        *head, last = parts
        if any(p > 255 for p in head) or last >= 256 ** (5 - len(parts)):
            raise ValueError
        value = last
        for i, part in enumerate(head):
            value |= part << (24 - 8 * i)
        return ipaddress.IPv4Address(value)
    except ValueError:
        raise BlockedRequest(f"{host!r} is neither a host name nor a valid IPv4 address") from None


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system's getaddrinfo (off the event loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return [info[4][0] for info in infos]


def check_url(url: httpx.URL, allowed_ports: Collection[int]) -> int:
    """Refuse a URL whose scheme, port or userinfo is not allowed; return its port."""
    if url.scheme not in DEFAULT_PORTS:
        raise BlockedRequest(f"scheme {url.scheme!r} is not allowed (only http and https)")
    if url.userinfo:
        raise BlockedRequest("URLs with credentials (user@host) are not allowed")
    if not url.host:
        raise BlockedRequest("the URL has no host")
    port = url.port or DEFAULT_PORTS[url.scheme]
    if port not in allowed_ports:
        raise BlockedRequest(f"port {port} is not allowed (allowed: {sorted(allowed_ports)})")
    return port


class GuardedTransport(httpx.AsyncBaseTransport):
    """Wraps a transport so that it only ever connects to checked public addresses.

    `allow_addresses` exempts exact addresses from the range check; it exists so tests can
    reach their loopback server and must stay empty in production.
    """

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        *,
        resolver: Resolver | None = None,
        allowed_ports: Collection[int] = (80, 443),
        allow_addresses: Collection[IPAddress] = (),
        resolve_timeout: float = 5.0,
    ) -> None:
        self._inner = inner
        self._resolve = resolver or system_resolver
        self._ports = frozenset(allowed_ports)
        self._allow = frozenset(allow_addresses)
        self._resolve_timeout = resolve_timeout

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """Every address `host` stands for, all checked, in resolver order, or BlockedRequest."""
        literal = parse_ip_host(host)
        if literal is not None:
            found = [literal]
        else:
            try:
                async with asyncio.timeout(self._resolve_timeout):
                    answers = await self._resolve(host, port)
            except (OSError, TimeoutError) as exc:
                raise BlockedRequest(f"could not resolve {host!r}: {str(exc) or 'timed out'}") from None
            try:
                found = list(dict.fromkeys(ipaddress.ip_address(a) for a in answers))
            except ValueError as exc:
                raise BlockedRequest(f"{host!r} resolved to a malformed address: {exc}") from None
            if not found:
                raise BlockedRequest(f"{host!r} resolved to no address")
        for ip in found:
            reason = None if ip in self._allow else blocked_reason(ip)
            if reason:
                named = "" if literal is not None else f"{host!r} resolves to "
                raise BlockedRequest(f"{named}{reason}")
        return found

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        port = check_url(request.url, self._ports)
        host = request.url.raw_host.decode("ascii")  # IDNA-encoded: what DNS and TLS see
        last_error: Exception | None = None
        for ip in await self.addresses(host, port):
            pinned = httpx.Request(
                request.method,
                request.url.copy_with(host=str(ip)),
                headers=request.headers,  # carries Host: the real name
                stream=request.stream,
                extensions={**request.extensions, "sni_hostname": host},
            )
            try:
                return await self._inner.handle_async_request(pinned)
            except httpx.ConnectError as exc:  # try the next checked address, as a browser would
                last_error = exc
        assert last_error is not None
        raise last_error

    async def aclose(self) -> None:
        await self._inner.aclose()
