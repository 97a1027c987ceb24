"""Semantic Scholar Graph API (https://api.semanticscholar.org/api-docs/graph): abstracts and fallback search.

Papers are addressed as `DOI:<doi>` or, for arXiv preprints, `ARXIV:<id>` (Semantic Scholar does
not resolve arXiv DOIs reliably).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from zocrates_contracts.identifiers import arxiv_of_doi, normalize_arxiv, normalize_doi
from zocrates_discovery.adapters.http import Http
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.domain.works import Work

FIELDS = "title,authors,year,venue,journal,externalIds,abstract,citationCount,openAccessPdf"


def license_name(value: str | None) -> str | None:
    """`CCBYNC` -> `cc-by-nc`; other values lower-cased."""
    if not value:
        return None
    parts = re.findall(r"BY|NC|ND|SA", value.upper()[2:]) if value.upper().startswith("CC") else []
    if value.upper() == "CC0":
        return "cc0"
    return "cc-" + "-".join(p.lower() for p in parts) if parts else value.lower()


def paper_key(doi: str | None, arxiv_id: str | None) -> str | None:
    """How Semantic Scholar addresses a paper: its arXiv id for preprints, else its DOI."""
    arxiv_id = arxiv_id or arxiv_of_doi(doi)
    if arxiv_id:
        return f"ARXIV:{arxiv_id}"
    return f"DOI:{doi}" if doi else None


def parse_paper(paper: dict[str, Any]) -> Work | None:
    """A `Work` from one Semantic Scholar paper; None when it has no title."""
    title = paper.get("title")
    if not title:
        return None
    ext = paper.get("externalIds") or {}
    doi = normalize_doi(ext.get("DOI"))
    pdf = paper.get("openAccessPdf") or {}
    journal = paper.get("journal") or {}
    status = pdf.get("status")
    return Work(
        title=" ".join(title.split()),
        source="semanticscholar",
        authors=[a["name"] for a in paper.get("authors") or [] if a.get("name")],
        year=paper.get("year"),
        venue=journal.get("name") or paper.get("venue") or None,
        doi=doi,
        arxiv_id=normalize_arxiv(ext.get("ArXiv")) or arxiv_of_doi(doi),
        pmid=str(ext["PubMed"]) if ext.get("PubMed") else None,
        abstract=(paper.get("abstract") or "").strip() or None,
        cited_by_count=paper.get("citationCount"),
        pdf_url=pdf.get("url") or None,
        oa_status=status.lower() if status else None,
        license=license_name(pdf.get("license")),
    )


class SemanticScholar:
    def __init__(self, http: Http, settings: DiscoverySettings):
        self._http = http
        self._base = settings.semantic_scholar_url.rstrip("/")
        key = settings.semantic_scholar_api_key
        self._headers = {"x-api-key": key.get_secret_value()} if key else {}

    async def paper(self, key: str, fields: str = FIELDS, timeout: float | None = None) -> Work | None:
        """The paper addressed by `key` (`DOI:...`, `ARXIV:...`), or None if unknown."""
        fetched = await self._http.get(
            f"{self._base}/paper/{quote(key, safe=':/')}",
            params={"fields": fields},
            headers=self._headers,
            timeout=timeout,
        )
        return parse_paper(fetched.data) if fetched and isinstance(fetched.data, dict) else None

    async def papers(self, keys: list[str], fields: str = FIELDS, timeout: float | None = None) -> list[Work | None]:
        """The papers addressed by `keys` in one batch request, aligned with `keys` (None if unknown)."""
        if not keys:
            return []
        fetched = await self._http.request(
            "POST",
            f"{self._base}/paper/batch",
            params={"fields": fields},
            headers=self._headers,
            json_body={"ids": keys[:500]},
            timeout=timeout,
        )
        papers = (fetched.data if fetched else None) or []
        if not isinstance(papers, list):
            return [None] * len(keys)
        found = [parse_paper(p) if isinstance(p, dict) else None for p in papers]
        return (found + [None] * len(keys))[: len(keys)]

    async def search(self, query: str, limit: int = 25) -> list[Work]:
        """Papers relevant to `query`, best first."""
        fetched = await self._http.get(
            f"{self._base}/paper/search",
            params={"query": query[:500], "limit": min(limit, 100), "fields": FIELDS},
            headers=self._headers,
        )
        papers = ((fetched.data if fetched else None) or {}).get("data") or []
        return [w for w in map(parse_paper, papers) if w is not None]
