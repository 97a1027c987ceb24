"""S-PDF-4: the deeper check in a limited subprocess. Bombs, encryption, corruption, page
floods, memory and time limits each end as a reason; the test process is never at risk."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from staging.loopback import SMALL_PDF, bomb_pdf, pages_pdf

from zocrates_staging.adapters.pdfcheck import PARSERS, available_parser, check_pdf

INSTALLED = [p for p in PARSERS if available_parser(p)]
pytestmark = pytest.mark.skipif(not INSTALLED, reason="neither pypdf nor pymupdf is installed")


def write(tmp_path: Path, data: bytes, name: str = "x.pdf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


async def check(path: Path, parser: str, **overrides) -> str | None:
    limits = dict(timeout=20.0, cpu_s=15, memory_mb=1536, max_pages=5000, max_inflated_mb=300)
    limits.update(overrides)
    return await check_pdf(path, parser=parser, **limits)


def encrypted(user_password: str, owner_password: str) -> bytes:
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    writer.add_blank_page(612, 792)
    writer.encrypt(
        user_password=user_password, owner_password=owner_password, algorithm="RC4-128"
    )  # RC4 needs no optional crypto package
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.fixture(params=INSTALLED)
def parser(request) -> str:
    return request.param


async def test_real_papers_pass(parser, fixtures_dir):
    papers = sorted((fixtures_dir / "pdfs").rglob("*.pdf"))
    assert papers
    for paper in papers:
        assert await check(paper, parser) is None, paper.name


async def test_a_small_valid_pdf_passes(parser, tmp_path):
    assert await check(write(tmp_path, SMALL_PDF), parser) is None


async def test_a_decompression_bomb_is_refused(parser, tmp_path, record_property):
    path = write(tmp_path, bomb_pdf(200))  # about 200 KB inflating to 200 MB
    started = time.perf_counter()
    reason = await check(path, parser, max_inflated_mb=50)
    record_property(f"bomb_check_s_{parser}", round(time.perf_counter() - started, 2))
    assert reason and "bomb" in reason, reason
    assert path.stat().st_size < 1024 * 1024


async def test_a_password_protected_pdf_is_refused(parser, tmp_path):
    reason = await check(write(tmp_path, encrypted("secret", "owner")), parser)
    assert reason and "password" in reason


async def test_an_owner_password_only_pdf_is_accepted(parser, tmp_path):
    """Publishers' print/copy restrictions open without a password: not a reason to refuse."""
    assert await check(write(tmp_path, encrypted("", "owner")), parser) is None


@pytest.mark.parametrize(
    "body",
    [
        b"%PDF-1.7\n" + b"garbage " * 500,
        SMALL_PDF[: len(SMALL_PDF) // 3],
        b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF",
    ],
)
async def test_a_corrupt_pdf_is_refused(parser, tmp_path, body):
    assert await check(write(tmp_path, body), parser)


async def test_too_many_pages_are_refused(parser, tmp_path):
    reason = await check(write(tmp_path, pages_pdf(150)), parser, max_pages=100)
    assert reason and "150 pages" in reason


async def test_the_wall_clock_limit_stops_the_check(parser, tmp_path):
    started = time.perf_counter()
    reason = await check(write(tmp_path, SMALL_PDF), parser, timeout=0.01)
    assert reason and "longer than" in reason
    assert time.perf_counter() - started < 2


async def test_the_memory_limit_stops_the_check(parser, tmp_path):
    """Far too little address space: the child fails, the parent reports it and goes on."""
    reason = await check(write(tmp_path, SMALL_PDF), parser, memory_mb=24)
    assert reason and ("memory" in reason or "without a verdict" in reason), reason


async def test_a_missing_parser_is_reported_as_none():
    assert available_parser("off") is None
    assert available_parser("no_such_parser_pkg") is None
    assert available_parser("auto") == INSTALLED[0]
