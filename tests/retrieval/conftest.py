"""Fixtures of the retrieval tests: real Zotero schema, real PDFs, the real embedding model."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pymupdf
import pytest
import structlog

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures"
SCHEMA = FIXTURES / "zotero" / "schema"
PDFS = FIXTURES / "pdfs"
DBS = FIXTURES / "zotero" / "db"


@pytest.fixture(autouse=True)
def structlog_to_stdlib():
    """Retrieval's structlog lines reach stdlib logging, as `configure_logging` routes them in
    the services, so `caplog` sees them (the event is the record's message, fields its extras)."""
    before = structlog.get_config()
    structlog.configure(
        processors=[structlog.stdlib.render_to_log_kwargs],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    yield
    structlog.configure(**before)


@pytest.fixture(scope="session")
def schema_dir() -> Path:
    if not SCHEMA.exists():
        pytest.skip(f"Zotero schema fixtures not found at {SCHEMA}")
    return SCHEMA


@pytest.fixture(scope="session")
def pdf_dir() -> Path:
    if not PDFS.exists():
        pytest.skip(f"PDF fixtures not found at {PDFS}")
    return PDFS


@pytest.fixture(scope="session")
def embedder():
    """The shipped all-MiniLM-L6-v2, loaded once for the whole session (about 5 s)."""
    from zocrates_retrieval.adapters.embed import Embedder
    from zocrates_retrieval.config import default_embedding_model

    return Embedder.shared(default_embedding_model(), "cpu", 32)


@pytest.fixture
def no_home_zotero(monkeypatch, tmp_path):
    """Settings must not discover a real ~/Zotero during tests."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ZOCRATES_RETRIEVAL_ZOTERO_DIR", raising=False)
    monkeypatch.delenv("ZOCRATES_ZOTERO_DIR", raising=False)


def text_pdf(sections: list[tuple[str, list[str]]], toc: bool = True, title: str | None = None) -> bytes:
    """A PDF with a 16 pt heading per section and 10 pt paragraphs; an outline if `toc`."""
    doc = pymupdf.open()
    outline = []
    page = doc.new_page()
    y = 72
    if title:
        page.insert_text((72, y), title, fontsize=22)
        y += 40
    for heading, paragraphs in sections:
        if y > 650:
            page, y = doc.new_page(), 72
        page.insert_text((72, y), heading, fontsize=16, fontname="hebo")
        outline.append([1, heading, doc.page_count])
        y += 28
        for para in paragraphs:
            rect = pymupdf.Rect(72, y, 520, 780)
            rest = page.insert_textbox(rect, para, fontsize=10)
            if rest < 0:  # did not fit: next page
                page, y = doc.new_page(), 72
                rest = page.insert_textbox(pymupdf.Rect(72, y, 520, 780), para, fontsize=10)
            y = 780 - rest + 12
    if toc:
        doc.set_toc(outline)
    if title:
        doc.set_metadata({"title": title})
    return doc.tobytes()


def encrypted_pdf() -> bytes:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Confidential results about thermal conductivity.", fontsize=11)
    return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")


def corrupt_pdf() -> bytes:
    return b"%PDF-1.7\n" + os.urandom(3000) + b"\n%%EOF\n"


def scanned_pdf() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
    pix.clear_with(200)
    page.insert_image(pymupdf.Rect(72, 72, 400, 400), pixmap=pix)
    return doc.tobytes()


def empty_pdf() -> bytes:
    doc = pymupdf.open()
    doc.new_page()
    return doc.tobytes()


@pytest.fixture(scope="session")
def make():
    """PDF makers for tests (conftest modules are not importable under importlib mode)."""
    return SimpleNamespace(
        text_pdf=text_pdf,
        encrypted_pdf=encrypted_pdf,
        corrupt_pdf=corrupt_pdf,
        scanned_pdf=scanned_pdf,
        empty_pdf=empty_pdf,
    )


@pytest.fixture(scope="session")
def zotero_db_dir() -> Path:
    if not DBS.exists():
        pytest.skip(f"real Zotero databases not found at {DBS}")
    return DBS
