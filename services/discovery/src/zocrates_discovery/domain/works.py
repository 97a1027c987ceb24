"""A found work as the providers describe it, before it becomes a contract `Candidate`.

Providers fill what they know; the service merges, enriches (Unpaywall, Crossref, abstracts) and
only then freezes a `Work` into a `Candidate`. `pmid` travels here because the PubMed abstract
backfill needs it while the candidate contract has no field for it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from itertools import chain, zip_longest

from zocrates_contracts import Candidate
from zocrates_contracts.identifiers import normalize_title

_UNSAFE_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]+")


@dataclass
class Work:
    """One paper found online (mutable while it is being enriched)."""

    title: str
    source: str
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    openalex_id: str | None = None
    pmid: str | None = None
    abstract: str | None = None
    keywords: list[str] = field(default_factory=list)
    cited_by_count: int | None = None
    pdf_url: str | None = None
    oa_status: str | None = None
    license: str | None = None

    def identity(self) -> tuple[str, ...]:
        """Keys under which two results are the same work (for merging several queries' results)."""
        keys = [f"W:{self.openalex_id}"] if self.openalex_id else []
        keys += [f"doi:{self.doi}"] if self.doi else []
        keys += [f"arxiv:{self.arxiv_id}"] if self.arxiv_id else []
        title = normalize_title(self.title)
        keys += [f"title:{title}"] if title else []
        return tuple(keys)

    def candidate_id(self) -> str:
        """A stable, subject-safe id: the OpenAlex id, else a digest of the DOI, arXiv id or title."""
        if self.openalex_id:
            return _UNSAFE_ID_CHARS.sub("", self.openalex_id)[:64]
        basis = self.doi or (f"arxiv:{self.arxiv_id}" if self.arxiv_id else normalize_title(self.title))
        return "c" + hashlib.sha256(basis.encode()).hexdigest()[:24]

    def to_candidate(self) -> Candidate:
        return Candidate(
            candidate_id=self.candidate_id(),
            title=self.title,
            authors=self.authors,
            year=self.year,
            venue=self.venue,
            doi=self.doi,
            arxiv_id=self.arxiv_id,
            openalex_id=self.openalex_id,
            abstract=self.abstract,
            keywords=self.keywords,
            cited_by_count=self.cited_by_count,
            pdf_url=self.pdf_url,
            oa_status=self.oa_status,
            license=self.license,
        )


def interleave(lists: list[list[Work]]) -> list[Work]:
    """The best of each query first, then the second best of each, and so on."""
    return [w for w in chain.from_iterable(zip_longest(*lists)) if w is not None]


def merge(works: list[Work]) -> list[Work]:
    """Each work once: a later one sharing an OpenAlex id, DOI, arXiv id or title is dropped."""
    seen: set[str] = set()
    merged = []
    for work in works:
        keys = set(work.identity())
        if keys & seen:
            continue
        seen |= keys
        merged.append(work)
    return merged
