"""Factories for the citation core tests: ranked chunks with readable metadata."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from zocrates_contracts import Creator, EvidenceChunk

SURNAMES = ["Watson", "Franklin", "Jonsson", "Vaswani", "Smith", "Okafor", "Lindqvist", "Tanaka"]


def chunk(
    index: int,
    item_key: str | None = None,
    *,
    authors: Sequence[str] | None = None,
    year: int | None = -1,
    title: str | None = None,
    text: str | None = None,
    publication: str | None = None,
) -> EvidenceChunk:
    names = list(authors) if authors is not None else [SURNAMES[(index - 1) % len(SURNAMES)]]
    return EvidenceChunk(
        chunk_id=f"chunk-{index}",
        item_key=item_key or f"ITEM{index:04d}",
        attachment_key=f"ATT{index:05d}",
        title=title if title is not None else f"Paper number {index}",
        creators=[Creator(first_name="A.", last_name=n) for n in names],
        year=2000 + index if year == -1 else year,  # -1: a distinct default year per chunk
        section="Results",
        publication=publication,
        text=text if text is not None else f"Passage {index}: the measured rate was {index}.5 percent.",
    )


def chunks_for(items: Sequence[str]) -> list[EvidenceChunk]:
    """One chunk per entry, ranked in order; equal entries are chunks of the same item."""
    return [chunk(i, key) for i, key in enumerate(items, start=1)]


@pytest.fixture(scope="session")
def make_chunk() -> Callable[..., EvidenceChunk]:
    return chunk


@pytest.fixture(scope="session")
def make_chunks() -> Callable[[Sequence[str]], list[EvidenceChunk]]:
    return chunks_for
