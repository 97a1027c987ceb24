"""Download one PDF safely: redirects followed by hand, a total deadline, a byte cap, a magic check.

The client passed in must be built by `make_client` (the SSRF guard as its transport,
`trust_env=False`, `follow_redirects=False`). What is written goes to a temporary file that
is fsynced before it is handed over; on any refusal or error the file is removed, so nothing
partial is ever left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from pathlib import Path

import httpx

from zocrates_staging.adapters.guard import BlockedRequest, GuardedTransport, IPAddress, Resolver

PDF_MAGIC = b"%PDF-"
#: Readers accept junk before the header; many viewers look within the first 1024 bytes.
SNIFF_WINDOW = 1024
CHUNK = 64 * 1024
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})


class Rejected(Exception):
    """A download refused or failed; `reason` is shown to the user in the manifest."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Downloaded:
    """A complete, fsynced PDF download in a temporary file the caller now owns."""

    path: Path
    size: int
    sha256: str
    final_url: str
    redirects: int


def sniff_pdf(head: bytes) -> str | None:
    """Why `head` (the first bytes of a body) is not a PDF, or None when it is one."""
    window = head[:SNIFF_WINDOW]
    if PDF_MAGIC in window:
        return None
    if not head:
        return "empty body, not a PDF"
    lowered = window.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<?xml", b"<")):
        return "an HTML/XML page, not a PDF (likely an error page, a login page or a captcha)"
    if window.startswith(b"\x89PNG") or window.startswith(b"\xff\xd8\xff"):
        return "an image, not a PDF"
    if window.startswith(b"\x1f\x8b"):
        return "a gzip-compressed body, not a PDF"
    if PDF_MAGIC in head:
        return f"%PDF- appears only after the first {SNIFF_WINDOW} bytes; not accepted as a PDF"
    return f"does not start like a PDF (no %PDF- in the first {SNIFF_WINDOW} bytes)"


def display_url(url: httpx.URL) -> str:
    """The URL without credentials or query, safe for logs and reasons."""
    return str(url.copy_with(userinfo=b"", query=None, fragment=None))


def make_client(
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    resolver: Resolver | None = None,
    allowed_ports: Collection[int] = (80, 443),
    allow_addresses: Collection[IPAddress] = (),
    connect_timeout: float = 5.0,
    read_timeout: float = 10.0,
    user_agent: str = "Zocrates-staging",
) -> httpx.AsyncClient:
    """An httpx client whose every request goes through the SSRF guard.

    `transport` is the inner transport (tests pass a MockTransport); the guard always wraps
    it. Keep-alive is off so that each request's connection is made, and its TLS name
    verified, for that request alone.
    """
    inner = transport or httpx.AsyncHTTPTransport(limits=httpx.Limits(max_keepalive_connections=0), retries=0)
    guarded = GuardedTransport(
        inner,
        resolver=resolver,
        allowed_ports=allowed_ports,
        allow_addresses=allow_addresses,
        resolve_timeout=connect_timeout,
    )
    return httpx.AsyncClient(
        transport=guarded,
        # Downloads for different users share this client: keep no cookies between them.
        cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
        trust_env=False,  # an environment proxy would bypass the guard
        follow_redirects=False,  # followed by hand below, each hop checked by the guard
        timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
        headers={
            "User-Agent": user_agent,
            "Accept": "application/pdf,*/*;q=0.5",
            # A compressed body would be inflated outside the byte cap's view.
            "Accept-Encoding": "identity",
        },
    )


async def download_pdf(
    client: httpx.AsyncClient,
    url: str,
    dest_dir: Path,
    *,
    max_bytes: int,
    max_redirects: int,
    total_timeout: float,
) -> Downloaded:
    """Fetch `url` into a temporary file in `dest_dir`, or raise Rejected with the reason."""
    try:
        start = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise Rejected(f"invalid PDF URL: {exc}") from None
    try:
        async with asyncio.timeout(total_timeout):
            return await _follow(client, start, dest_dir, max_bytes, max_redirects)
    except TimeoutError:
        raise Rejected(f"download did not finish within the {total_timeout:g} s deadline") from None


async def _follow(
    client: httpx.AsyncClient, url: httpx.URL, dest_dir: Path, max_bytes: int, max_redirects: int
) -> Downloaded:
    for hop in range(max_redirects + 1):
        where = f" (redirect hop {hop}, {display_url(url)})" if hop else ""
        try:
            response = await client.send(client.build_request("GET", url), stream=True)
        except BlockedRequest as exc:
            raise Rejected(f"blocked{where}: {exc.reason}") from None
        except httpx.TimeoutException as exc:
            raise Rejected(f"timed out{where}: {type(exc).__name__}") from None
        except httpx.HTTPError as exc:
            raise Rejected(f"could not connect{where}: {str(exc) or type(exc).__name__}") from None
        try:
            if response.status_code in REDIRECT_CODES:
                location = response.headers.get("location")
                if not location:
                    raise Rejected(f"HTTP {response.status_code} redirect without a Location{where}")
                try:
                    url = url.join(location)
                except httpx.InvalidURL as exc:
                    raise Rejected(f"invalid redirect Location{where}: {exc}") from None
                continue
            if response.status_code != 200:
                raise Rejected(f"the server answered HTTP {response.status_code}{where}")
            return await _save(response, dest_dir, max_bytes, url, hop)
        finally:
            await response.aclose()
    raise Rejected(f"more than {max_redirects} redirects")


async def _save(response: httpx.Response, dest_dir: Path, max_bytes: int, url: httpx.URL, redirects: int) -> Downloaded:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise Rejected(f"file too large: Content-Length {int(declared):,} bytes exceeds the {max_bytes:,}-byte cap")
    dest_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=dest_dir, prefix=".download-", suffix=".part")
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest = hashlib.sha256()
            size, head, sniffed = 0, b"", False
            try:
                async for chunk in response.aiter_raw(CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise Rejected(f"file too large: aborted after {size:,} bytes, over the {max_bytes:,}-byte cap")
                    if not sniffed:
                        head += chunk
                        if len(head) >= SNIFF_WINDOW:
                            _require_pdf(head)
                            sniffed = True
                    digest.update(chunk)
                    out.write(chunk)
            except httpx.TimeoutException:
                raise Rejected(f"stalled mid-download after {size:,} bytes (read timeout)") from None
            except httpx.HTTPError as exc:
                raise Rejected(
                    f"connection broke mid-download after {size:,} bytes: {str(exc) or type(exc).__name__}"
                ) from None
            if not sniffed:
                _require_pdf(head)
            out.flush()
            await asyncio.to_thread(os.fsync, out.fileno())
        return Downloaded(path, size, digest.hexdigest(), display_url(url), redirects)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        raise


def _require_pdf(head: bytes) -> None:
    reason = sniff_pdf(head)
    if reason:
        raise Rejected(reason)
