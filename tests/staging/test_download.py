"""S-PDF-1..3 over real HTTP on loopback: size cap, slow drip, hang-up, wrong type.

Each refusal names its reason and leaves no file behind in the work directory.
"""

from __future__ import annotations

import ipaddress
import resource
import time

import pytest
from staging.loopback import (
    SMALL_PDF,
    chunked,
    drip,
    endless_pdf,
    hang_up,
    redirect,
    respond,
)
from staging.support import leftovers

from zocrates_staging.adapters.download import CHUNK, Rejected, download_pdf, make_client

MiB = 1024 * 1024
CAP = 1 * MiB


@pytest.fixture
async def client(server):
    async with make_client(
        allowed_ports=[80, 443, server.port],
        read_timeout=2,
        connect_timeout=2,
        allow_addresses=[ipaddress.ip_address("127.0.0.1")],
    ) as c:
        yield c


async def fetch(client, url, work_dir, *, max_bytes=CAP, total_timeout=5.0):
    return await download_pdf(client, url, work_dir, max_bytes=max_bytes, max_redirects=5, total_timeout=total_timeout)


async def refused(client, url, work_dir, **kw) -> str:
    with pytest.raises(Rejected) as caught:
        await fetch(client, url, work_dir, **kw)
    assert leftovers(work_dir) == [], "a refused download left a file behind"
    return caught.value.reason


async def test_a_pdf_is_downloaded_whole_with_its_digest(server, client, work_dir):
    import hashlib

    server.routes["/ok.pdf"] = respond(SMALL_PDF)
    done = await fetch(client, server.url("/ok.pdf"), work_dir)
    assert done.path.read_bytes() == SMALL_PDF
    assert done.size == len(SMALL_PDF)
    assert done.sha256 == hashlib.sha256(SMALL_PDF).hexdigest()
    assert server.requests[0][2]["accept-encoding"] == "identity"


async def test_junk_before_the_header_within_1024_bytes_is_accepted(server, client, work_dir):
    server.routes["/junk.pdf"] = respond(b"\n" * 1000 + SMALL_PDF)
    assert (await fetch(client, server.url("/junk.pdf"), work_dir)).size == 1000 + len(SMALL_PDF)


async def test_a_declared_oversize_is_refused_before_reading(server, client, work_dir):
    server.routes["/big.pdf"] = respond(b"%PDF-1.7\n", content_length=CAP + 1)
    reason = await refused(client, server.url("/big.pdf"), work_dir)
    assert "Content-Length" in reason and "cap" in reason


async def test_a_lying_content_length_does_not_get_past_the_cap(server, client, work_dir, record_property):
    # Content-Length says 1 KB; the chunked body goes on for 3 MB.
    body = [b"%PDF-1.7\n"] + [b"\0" * (256 * 1024)] * 12
    server.routes["/lying.pdf"] = chunked(body, declared_length=1024)
    reason = await refused(client, server.url("/lying.pdf"), work_dir)
    assert "too large" in reason
    read = int(reason.split("after ")[1].split(" bytes")[0].replace(",", ""))
    record_property("bytes_read_at_abort", read)
    assert CAP < read <= CAP + CHUNK


async def test_a_missing_content_length_does_not_get_past_the_cap(server, client, work_dir):
    body = b"%PDF-1.7\n" + b"\0" * (3 * MiB)
    server.routes["/nolength.pdf"] = respond(body, content_length=None)  # ends at close
    assert "too large" in await refused(client, server.url("/nolength.pdf"), work_dir)


async def test_an_endless_stream_stops_at_the_default_100_mb_cap(server, client, work_dir, record_property):
    """S-PDF-1 at the real cap: streamed to disk, so memory stays flat."""
    server.routes["/endless.pdf"] = chunked(endless_pdf())
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    reason = await refused(client, server.url("/endless.pdf"), work_dir, max_bytes=100 * MiB, total_timeout=60)
    grew_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    record_property("abort_s", round(time.perf_counter() - started, 2))
    record_property("peak_rss_growth_mb", round(grew_mb, 1))
    assert "too large" in reason
    assert grew_mb < 64


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<!DOCTYPE html><html><body>Access denied</body></html>", "HTML"),
        (b"<html><head><title>Just a moment...</title></head>" + b" " * 2000, "HTML"),
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image"),
        (b"", "empty"),
        (b"x" * 2000 + SMALL_PDF, "after the first 1024 bytes"),
        (b"\x1f\x8b\x08\x00" + b"\0" * 50, "gzip"),
        (b"PK\x03\x04" + b"\0" * 3000, "does not start like a PDF"),
    ],
)
async def test_a_body_that_is_not_a_pdf_is_refused(server, client, work_dir, body, expected):
    server.routes["/fake.pdf"] = respond(body)  # served as application/pdf every time
    assert expected in await refused(client, server.url("/fake.pdf"), work_dir)


async def test_the_magic_check_stops_a_large_html_page_early(server, client, work_dir):
    server.routes["/page"] = chunked([b"<html>" + b"a" * 4096] * 1000)  # 4 MB of HTML
    assert "HTML" in await refused(client, server.url("/page"), work_dir, max_bytes=100 * MiB)


async def test_a_slow_drip_hits_the_total_deadline(server, client, work_dir, record_property):
    server.routes["/drip.pdf"] = drip(b"%PDF-1.7\n", delay=0.1)  # never a read timeout
    started = time.perf_counter()
    reason = await refused(client, server.url("/drip.pdf"), work_dir, total_timeout=1.0)
    took = time.perf_counter() - started
    record_property("wall_s_vs_deadline_1s", round(took, 2))
    assert "deadline" in reason
    assert 0.9 < took < 2.0


async def test_a_stall_hits_the_read_timeout(server, client, work_dir):
    server.routes["/stall.pdf"] = drip(b"%PDF-1.7\n", delay=60)
    reason = await refused(client, server.url("/stall.pdf"), work_dir, total_timeout=10)
    assert "stalled" in reason


async def test_a_mid_stream_disconnect_is_refused(server, client, work_dir):
    server.routes["/cut.pdf"] = hang_up(b"%PDF-1.7\n" + b"\0" * 20_000, content_length=100_000)
    reason = await refused(client, server.url("/cut.pdf"), work_dir)
    assert "connection broke mid-download" in reason


@pytest.mark.parametrize("status", [403, 404, 429, 500])
async def test_an_error_status_is_refused(server, client, work_dir, status):
    server.routes["/err.pdf"] = respond(SMALL_PDF, status=status)
    assert f"HTTP {status}" in await refused(client, server.url("/err.pdf"), work_dir)


async def test_redirects_on_the_allowed_host_are_followed(server, client, work_dir):
    server.routes["/a"] = redirect("/b", status=301)
    server.routes["/b"] = redirect(server.url("/c.pdf"), status=307)
    server.routes["/c.pdf"] = respond(SMALL_PDF)
    done = await fetch(client, server.url("/a"), work_dir)
    assert done.redirects == 2 and done.path.read_bytes() == SMALL_PDF


async def test_a_redirect_to_a_private_address_is_blocked(server, client, work_dir):
    server.routes["/go"] = redirect("http://10.0.0.1/paper.pdf")
    reason = await refused(client, server.url("/go"), work_dir)
    assert "redirect hop 1" in reason and "RFC 1918" in reason
    assert server.connections == 1  # the first hop only


async def test_a_redirect_to_another_port_on_loopback_is_blocked(server, client, work_dir):
    """Allowlisting the test address does not open its other ports."""
    server.routes["/go"] = redirect("http://127.0.0.1:22/")
    assert "port 22" in await refused(client, server.url("/go"), work_dir)


async def test_a_name_is_connected_to_its_checked_address_with_its_own_host_header(server, work_dir):
    """DNS pinning over a real socket: the name resolves once, the TCP connection goes to the
    checked IP, and the server still sees the name in Host."""
    from staging.support import FakeResolver

    server.routes["/p.pdf"] = respond(SMALL_PDF)
    resolver = FakeResolver({"pdfs.test": ["127.0.0.1"]})
    async with make_client(
        resolver=resolver, allowed_ports=[server.port], allow_addresses=[ipaddress.ip_address("127.0.0.1")]
    ) as client:
        done = await fetch(client, f"http://pdfs.test:{server.port}/p.pdf", work_dir)
    assert done.path.read_bytes() == SMALL_PDF
    assert done.final_url == f"http://pdfs.test:{server.port}/p.pdf"
    assert resolver.calls == ["pdfs.test"]
    assert server.requests[0][2]["host"] == f"pdfs.test:{server.port}"


async def test_cookies_are_not_carried_from_one_download_to_the_next(server, client, work_dir):
    """One client serves every user: a cookie one download received must not go out again."""
    server.routes["/a.pdf"] = respond(SMALL_PDF, headers={"Set-Cookie": "session=alice; Path=/"})
    server.routes["/b.pdf"] = respond(SMALL_PDF)
    await fetch(client, server.url("/a.pdf"), work_dir)
    await fetch(client, server.url("/b.pdf"), work_dir)
    assert "cookie" not in server.requests[1][2]
