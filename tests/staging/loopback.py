"""A scripted HTTP/1.1 server on 127.0.0.1 for the staging tests and benchmark.

Raw asyncio streams rather than a framework, because the tests need to misbehave on purpose:
lie about Content-Length, drip one byte at a time, hang up mid-body. It counts every TCP
connection, which is how the SSRF tests show that nothing reached it.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import Awaitable, Callable, Iterable

Handler = Callable[[asyncio.StreamWriter], Awaitable[None]]


class LoopbackServer:
    """Routes exact request targets to handlers; anything else is a 404."""

    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.connections = 0
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> LoopbackServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def hits(self, path: str) -> int:
        return sum(1 for _, target, _ in self.requests if target == path)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *lines = head.decode("latin-1").split("\r\n")
            method, target, _ = line.split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in lines if ":" in h)}
            self.requests.append((method, target, headers))
            await self.routes.get(target, respond(b"not found", status=404))(writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away, as several tests intend
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines + ["Connection: close", "", ""])).encode("latin-1")


def respond(
    body: bytes,
    *,
    status: int = 200,
    content_type: str = "application/pdf",
    content_length: int | None | bool = True,
    headers: dict[str, str] | None = None,
) -> Handler:
    """A whole response. `content_length`: True = the real length, an int = that (a lie),
    None/False = none at all (the body ends when the connection closes)."""

    async def handler(writer: asyncio.StreamWriter) -> None:
        fields = {"Content-Type": content_type, **(headers or {})}
        if content_length is True:
            fields["Content-Length"] = str(len(body))
        elif content_length:
            fields["Content-Length"] = str(content_length)
        writer.write(_head(status, fields) + body)
        await writer.drain()

    return handler


def redirect(location: str, status: int = 302) -> Handler:
    return respond(b"", status=status, content_type="text/plain", headers={"Location": location})


def chunked(pieces: Iterable[bytes], *, declared_length: int | None = None) -> Handler:
    """A chunked body, optionally with a (lying) Content-Length beside it; h11 goes by the
    chunks, so the body can be far longer than declared."""

    async def handler(writer: asyncio.StreamWriter) -> None:
        fields = {"Content-Type": "application/pdf", "Transfer-Encoding": "chunked"}
        if declared_length is not None:
            fields["Content-Length"] = str(declared_length)
        writer.write(_head(200, fields))
        for piece in pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    return handler


def endless_pdf(piece: int = 256 * 1024) -> Iterable[bytes]:
    """A never-ending PDF-looking body: the header, then zeros."""
    yield b"%PDF-1.7\n"
    block = b"\0" * piece
    while True:
        yield block


def drip(prefix: bytes, delay: float, *, content_length: int = 1_000_000) -> Handler:
    """Headers and `prefix` at once, then one byte every `delay` seconds, forever."""

    async def handler(writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, {"Content-Type": "application/pdf", "Content-Length": str(content_length)}) + prefix)
        await writer.drain()
        while True:
            await asyncio.sleep(delay)
            writer.write(b" ")
            await writer.drain()

    return handler


def hang_up(prefix: bytes, *, content_length: int) -> Handler:
    """Promise `content_length` bytes, send `prefix`, then close the connection."""

    async def handler(writer: asyncio.StreamWriter) -> None:
        writer.write(_head(200, {"Content-Type": "application/pdf", "Content-Length": str(content_length)}) + prefix)
        await writer.drain()

    return handler


# --- PDFs built byte by byte, so each test says exactly what is inside ----------------------


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF with the given objects (1-based, object 1 the catalog) and a correct xref."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def one_page_pdf(content: bytes, *, flate: bool = False) -> bytes:
    """One page whose content stream is `content` (already compressed when `flate`)."""
    filter_ = b" /Filter /FlateDecode" if flate else b""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            b"<< /Length %d%s >>\nstream\n%s\nendstream" % (len(content), filter_, content),
        ]
    )


def bomb_pdf(inflated_mb: int) -> bytes:
    """A small PDF whose one content stream inflates to `inflated_mb` MB of zeros."""
    packer = zlib.compressobj(9)
    block = b"\0" * (1024 * 1024)
    packed = b"".join(packer.compress(block) for _ in range(inflated_mb)) + packer.flush()
    return one_page_pdf(packed, flate=True)


def pages_pdf(pages: int) -> bytes:
    """A PDF of `pages` empty pages."""
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
            *[b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"] * pages,
        ]
    )


SMALL_PDF = one_page_pdf(b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET")
