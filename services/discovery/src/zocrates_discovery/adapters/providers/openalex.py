"""OpenAlex (https://developers.openalex.org): the primary search, and free singleton lookups.

2026 facts this adapter follows (DESIGN.md): the key goes in `Authorization: Bearer`, never an
empty one; keyless use is a small per-IP daily budget (demo mode); a search costs 10 credits and
its text is capped at 1,500 characters on the free tier, a singleton lookup is free; a 429 is either
a per-second throttle (retried by `Http`) or the spent daily budget (`BudgetExhausted`, not
retried). OpenAlex already merges a preprint with its journal version, so an arXiv location of a
journal work yields the work's arXiv id.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from zocrates_contracts.identifiers import arxiv_of_doi, find_arxiv_ids, normalize_doi
from zocrates_discovery.adapters.http import BudgetExhausted, Http, UpstreamError
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.domain.works import Work

#: Fields a search asks for; everything a candidate needs and nothing more (smaller answers).
SELECT = ",".join(
    (
        "id",
        "doi",
        "display_name",
        "publication_year",
        "ids",
        "primary_location",
        "best_oa_location",
        "open_access",
        "authorships",
        "concepts",
        "primary_topic",
        "abstract_inverted_index",
        "cited_by_count",
        "locations",
        "type",
    )
)
MAX_SEARCH_CHARS = 1_500
_HEADING = re.compile(r"^(?:abstract|summary)\s*[:.]?\s+(?=\S)", re.IGNORECASE)
KEYWORD_MIN_SCORE = 0.60


def rebuild_abstract(inverted: dict[str, list[int]] | None) -> str | None:
    """The abstract text from OpenAlex's `abstract_inverted_index` (word -> positions)."""
    if not inverted:
        return None
    positions = {pos: word for word, where in inverted.items() for pos in where}
    text = " ".join(positions[pos] for pos in sorted(positions)).strip()
    # Publishers' deposits often begin with their "Abstract" heading, which OpenAlex keeps as a word.
    text = _HEADING.sub("", text, count=1)
    return text or None


def keywords_of(work: dict[str, Any], min_score: float = KEYWORD_MIN_SCORE) -> list[str]:
    """Concepts scored at least `min_score`, then the primary topic; each once, in that order."""
    names = [
        c["display_name"]
        for c in work.get("concepts") or []
        if c.get("display_name") and (c.get("score") or 0) >= min_score
    ]
    topic = (work.get("primary_topic") or {}).get("display_name")
    if topic:
        names.append(topic)
    return list(dict.fromkeys(names))


def _short_id(url: str | None) -> str | None:
    return url.rstrip("/").rsplit("/", 1)[-1] if url else None


def parse_work(work: dict[str, Any]) -> Work | None:
    """A `Work` from one OpenAlex work object; None when it has no title."""
    title = work.get("display_name") or work.get("title")
    if not title:
        return None
    ids = work.get("ids") or {}
    doi = normalize_doi(work.get("doi") or ids.get("doi"))
    locations = [loc for loc in (work.get("locations") or []) if loc]
    arxiv_id = arxiv_of_doi(doi)
    if arxiv_id is None:
        urls = " ".join(str(loc.get(k) or "") for loc in locations for k in ("landing_page_url", "pdf_url"))
        arxiv_id = next(iter(find_arxiv_ids(urls)), None)
    primary = work.get("primary_location") or {}
    best = work.get("best_oa_location") or {}
    oa = work.get("open_access") or {}
    pdf_url = best.get("pdf_url") or next(
        (loc["pdf_url"] for loc in locations if loc.get("is_oa") and loc.get("pdf_url")), None
    )
    authors = [
        (a.get("author") or {}).get("display_name") or a.get("raw_author_name") for a in work.get("authorships") or []
    ]
    pmid = _short_id(ids.get("pmid"))
    return Work(
        title=title.strip(),
        source="openalex",
        authors=[a for a in authors if a],
        year=work.get("publication_year"),
        venue=(primary.get("source") or {}).get("display_name"),
        doi=doi,
        arxiv_id=arxiv_id,
        openalex_id=_short_id(work.get("id")),
        pmid=pmid if pmid and pmid.isdigit() else None,
        abstract=rebuild_abstract(work.get("abstract_inverted_index")),
        keywords=keywords_of(work),
        cited_by_count=work.get("cited_by_count"),
        pdf_url=pdf_url,
        oa_status=oa.get("oa_status"),
        license=best.get("license") or (primary.get("license") if primary.get("is_oa") else None),
    )


def search_text(query: str) -> str:
    """`query` cut at a word boundary to OpenAlex's free-tier limit on search text."""
    query = " ".join(query.split())
    if len(query) <= MAX_SEARCH_CHARS:
        return query
    return query[:MAX_SEARCH_CHARS].rsplit(" ", 1)[0]


class OpenAlex:
    """Search and look up works; tracks the daily budget from the rate-limit headers."""

    def __init__(self, http: Http, settings: DiscoverySettings):
        self._http = http
        self._base = settings.openalex_url.rstrip("/")
        key = settings.openalex_api_key
        self._headers = {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}
        self.keyed = key is not None
        self.exhausted_until: datetime | None = None
        self.remaining_usd: float | None = None
        self.last_cost_usd: float | None = None

    @property
    def demo(self) -> bool:
        """Keyless: a small shared per-IP budget, for trying Zocrates out."""
        return not self.keyed

    def budget_exhausted(self, now: datetime | None = None) -> bool:
        return self.exhausted_until is not None and (now or datetime.now(UTC)) < self.exhausted_until

    async def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        try:
            fetched = await self._http.get(f"{self._base}{path}", params=params, headers=self._headers, budgeted=True)
        except BudgetExhausted as exc:
            self.exhausted_until = exc.resets_at
            raise
        except UpstreamError as exc:
            raise self._explain(exc) from None
        if fetched is None:
            return None
        self._account(fetched.headers)
        return fetched.data

    def _explain(self, exc: UpstreamError) -> UpstreamError:
        # Two OpenAlex failures have their own remedies (DESIGN.md).
        body = str(exc.body)
        if exc.status == 503 and not self.keyed:
            return UpstreamError(
                exc.host,
                503,
                "OpenAlex is refusing keyless searches right now (503); "
                "set ZOCRATES_DISCOVERY_OPENALEX_API_KEY (a free key from openalex.org)",
                exc.body,
            )
        if exc.status == 504 and "query_timeout" in body:
            return UpstreamError(
                exc.host,
                504,
                "OpenAlex timed out on this query (query_timeout); try a shorter or more specific query",
                exc.body,
            )
        if exc.status == 401:
            return UpstreamError(
                exc.host,
                401,
                "OpenAlex rejected the API key (401); check ZOCRATES_DISCOVERY_OPENALEX_API_KEY",
                exc.body,
            )
        return exc

    def _account(self, headers: dict[str, str]) -> None:
        lowered = {k.lower(): v for k, v in headers.items()}
        for name, attr in (("x-ratelimit-remaining-usd", "remaining_usd"), ("x-ratelimit-cost-usd", "last_cost_usd")):
            try:
                setattr(self, attr, float(lowered[name]))
            except (KeyError, ValueError):
                pass

    async def search(self, query: str, per_page: int = 25, from_year: int | None = None) -> list[Work]:
        """Works most relevant to `query` (a `search=`, 10 credits), best first; only those
        published in `from_year` or later when it is given."""
        filters = "is_paratext:false" + (f",from_publication_date:{from_year}-01-01" if from_year else "")
        data = await self._get(
            "/works",
            {"search": search_text(query), "per_page": min(per_page, 200), "select": SELECT, "filter": filters},
        )
        results = (data or {}).get("results") or []
        return [w for w in map(parse_work, results) if w is not None]

    async def by_doi(self, doi: str) -> Work | None:
        """The work with this DOI (a free singleton lookup), or None when OpenAlex does not know it."""
        data = await self._get(f"/works/doi:{quote(doi, safe='/:()')}")
        return parse_work(data) if data else None

    async def by_id(self, openalex_id: str) -> Work | None:
        if not re.fullmatch(r"W\d+", openalex_id):
            return None
        data = await self._get(f"/works/{openalex_id}")
        return parse_work(data) if data else None
