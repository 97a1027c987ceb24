"""The deeper PDF check, run in a child process with resource limits.

Untrusted PDFs can be decompression bombs, parser crashers or CPU sinks (RELIABILITY.md §4),
so the parse happens in a child `python -I pdfcheck.py`, which sets RLIMIT_AS,
RLIMIT_CPU and RLIMIT_FSIZE on itself before importing the parser, under a wall-clock timeout
in the parent. A PDF that needs a password, has no or too many pages, inflates past the cap
or makes the parser fail, crash or run out of time or memory is refused with a reason; the
service only ever sees a reason string.

Parsers: pypdf (pure Python, fast to start, with its own decompression limits) or pymupdf
(starts slower: importing it takes about a second). A PDF encrypted with only an owner
password (print or copy restrictions, common from publishers) opens without one and is
accepted; only a PDF that needs a password to be read is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import signal
import sys
from pathlib import Path

PARSERS = ("pypdf", "pymupdf")
MiB = 1024 * 1024


def available_parser(choice: str) -> str | None:
    """The parser `choice` ("auto", a name or "off") resolves to here, or None for none."""
    if choice == "off":
        return None
    for name in PARSERS if choice == "auto" else (choice,):
        if importlib.util.find_spec(name) is not None:
            return name
    return None


async def check_pdf(
    path: Path,
    *,
    parser: str,
    timeout: float,
    cpu_s: int,
    memory_mb: int,
    max_pages: int,
    max_inflated_mb: int,
) -> str | None:
    """Why the PDF at `path` is refused, or None when the check passed."""
    # Run this file by path: the child needs only the stdlib and the parser, not our package.
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        __file__,
        str(path),
        "--parser",
        parser,
        "--cpu-s",
        str(cpu_s),
        "--memory-mb",
        str(memory_mb),
        "--max-pages",
        str(max_pages),
        "--max-inflated-mb",
        str(max_inflated_mb),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,  # parsers chatter; the verdict comes on stdout
    )
    try:
        async with asyncio.timeout(timeout):
            out, _ = await proc.communicate()
    except TimeoutError:
        return f"PDF check took longer than {timeout:g} s (parser stopped)"
    finally:
        if proc.returncode is None:  # timed out or cancelled: never leave the child running
            proc.kill()
            await proc.wait()
    return _verdict(proc.returncode, out, cpu_s, memory_mb)


def minimal_pdf() -> bytes:
    """A valid one-page PDF, for the self-test that proves the checker runs at all."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 4\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _verdict(returncode: int, out: bytes, cpu_s: int, memory_mb: int) -> str | None:
    if returncode < 0:
        sig = -returncode
        if sig in (signal.SIGXCPU, signal.SIGKILL):
            return f"PDF check exceeded its {cpu_s} s CPU limit (parser stopped)"
        return f"PDF parser crashed ({signal.Signals(sig).name})"
    try:
        result = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError, UnicodeDecodeError):
        return f"PDF check failed without a verdict (exit {returncode}; memory limit {memory_mb} MB)"
    return None if result.get("ok") else str(result.get("reason") or "refused by the PDF check")


# --- the child ------------------------------------------------------------------------------


def _limit_self(memory_mb: int, cpu_s: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (memory_mb * MiB, memory_mb * MiB))
    # SIGXCPU at the soft limit, SIGKILL one second later if it is ignored.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # a check writes no files
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _check_pypdf(path: str, max_pages: int, max_inflated: int) -> str | None:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    reader = PdfReader(path, strict=False)
    if reader.is_encrypted:
        try:
            if not reader.decrypt(""):
                return "encrypted: a password is needed to open it"
        except DependencyError:
            return "encrypted with AES; pypdf cannot open it without the cryptography package"
    pages = len(reader.pages)
    if reason := _page_count_reason(pages, max_pages):
        return reason
    inflated = 0
    for page in reader.pages:  # inflating every content stream is where bombs go off
        contents = page.get_contents()
        inflated += len(contents.get_data()) if contents is not None else 0
        if inflated > max_inflated:
            return _inflated_reason(max_inflated)
    return None


def _check_pymupdf(path: str, max_pages: int, max_inflated: int) -> str | None:
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)
    doc = pymupdf.open(path, filetype="pdf")
    if doc.needs_pass:
        return "encrypted: a password is needed to open it"
    if reason := _page_count_reason(doc.page_count, max_pages):
        return reason
    inflated = 0
    for xref in range(1, doc.xref_length()):
        if doc.xref_is_stream(xref):
            inflated += len(doc.xref_stream(xref) or b"")
            if inflated > max_inflated:
                return _inflated_reason(max_inflated)
    for page in doc:
        page.get_text()
    return None


def _page_count_reason(pages: int, max_pages: int) -> str | None:
    if pages == 0:
        return "the PDF has no pages"
    if pages > max_pages:
        return f"the PDF has {pages:,} pages, more than the {max_pages:,} allowed"
    return None


def _inflated_reason(max_inflated: int) -> str:
    return f"decompressed streams exceed {max_inflated // MiB} MB (a decompression bomb?)"


def _memory_reason(memory_mb: int) -> str:
    return f"the PDF needs more than the {memory_mb} MB memory limit to parse"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--parser", choices=PARSERS, required=True)
    parser.add_argument("--cpu-s", type=int, required=True)
    parser.add_argument("--memory-mb", type=int, required=True)
    parser.add_argument("--max-pages", type=int, required=True)
    parser.add_argument("--max-inflated-mb", type=int, required=True)
    args = parser.parse_args(argv)
    _limit_self(args.memory_mb, args.cpu_s)
    check = _check_pypdf if args.parser == "pypdf" else _check_pymupdf
    try:
        reason = check(args.path, args.max_pages, args.max_inflated_mb * MiB)
    except MemoryError:
        reason = _memory_reason(args.memory_mb)
    except Exception as exc:  # noqa: BLE001 - any parser failure means an unreadable PDF
        if type(exc).__name__ == "LimitReachedError":  # pypdf's own decompression limits
            reason = f"a stream inflates past the parser's limit (a decompression bomb?): {exc}"
        elif "malloc" in str(exc).lower() or "out of memory" in str(exc).lower():
            reason = _memory_reason(args.memory_mb)  # mupdf reports failed allocations so
        else:
            detail = str(exc).replace(args.path, "the file")  # no local paths in reasons
            reason = f"unreadable PDF ({args.parser}): {type(exc).__name__}: {detail}"
    reason = reason[:300] if reason else None
    with contextlib.suppress(BrokenPipeError):
        print(json.dumps({"ok": reason is None, "reason": reason}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
