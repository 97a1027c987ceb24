"""Crossref (https://api.crossref.org): DOI validation, backfill of dates and venues, fallback search.

Crossref registers journal DOIs, not arXiv's (those are DataCite's), so a 404 for an arXiv DOI
says nothing about the DOI's validity. Abstracts arrive as JATS XML and are reduced to text.
"""

from __future__ import annotations

import html
import re
from typing import Any
from urllib.parse import quote

from zocrates_contracts.identifiers import arxiv_of_doi, normalize_doi
from zocrates_discovery.adapters.http import Http
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.domain.contact import contact_email
from zocrates_discovery.domain.works import Work

_JATS_TITLE = re.compile(r"<jats:title>.*?</jats:title>", re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_CC_URL = re.compile(r"creativecommons\.org/(?:licenses/([a-z-]+)|publicdomain/(zero|mark))", re.IGNORECASE)
SELECT = "DOI,title,author,container-title,issued,published,abstract,is-referenced-by-count,license,type"


def jats_to_text(jats: str | None) -> str | None:
    """Plain text of a JATS abstract (its "Abstract" heading dropped)."""
    if not jats:
        return None
    text = _TAG.sub(" ", _JATS_TITLE.sub(" ", jats))
    text = " ".join(html.unescape(text).split())
    return text or None


def license_name(url: str | None) -> str | None:
    """`cc-by`, `cc-by-nc-nd`, `cc0`, ... for a Creative Commons URL; the URL itself otherwise."""
    if not url:
        return None
    match = _CC_URL.search(url)
    if not match:
        return url
    if match.group(2):
        return "cc0" if match.group(2).lower() == "zero" else "public-domain"
    return f"cc-{match.group(1).lower().strip('-')}"


def _year(message: dict[str, Any]) -> int | None:
    for key in ("issued", "published", "published-print", "published-online"):
        parts = (message.get(key) or {}).get("date-parts") or []
        if parts and parts[0] and parts[0][0]:
            return int(parts[0][0])
    return None


def _author(a: dict[str, Any]) -> str:
    return a.get("name") or " ".join(p for p in (a.get("given"), a.get("family")) if p)


def parse_item(item: dict[str, Any]) -> Work | None:
    """A `Work` from one Crossref work message; None when it has no title."""
    titles = [t for t in item.get("title") or [] if t and t.strip()]
    if not titles:
        return None
    doi = normalize_doi(item.get("DOI"))
    licenses = item.get("license") or []
    vor = next(
        (lic for lic in licenses if lic.get("content-version") in ("vor", "am")), licenses[0] if licenses else {}
    )
    return Work(
        title=" ".join(titles[0].split()),
        source="crossref",
        authors=[n for n in map(_author, item.get("author") or []) if n],
        year=_year(item),
        venue=next(iter(item.get("container-title") or []), None),
        doi=doi,
        arxiv_id=arxiv_of_doi(doi),
        abstract=jats_to_text(item.get("abstract")),
        cited_by_count=item.get("is-referenced-by-count"),
        license=license_name(vor.get("URL")),
    )


class Crossref:
    def __init__(self, http: Http, settings: DiscoverySettings):
        self._http = http
        self._base = settings.crossref_url.rstrip("/")
        self._configured_email = settings.contact_email

    def _polite(self) -> dict[str, str]:
        # Crossref still runs a polite pool for requests that name a contact.
        email = contact_email(self._configured_email)
        return {"mailto": email} if email else {}

    async def work(self, doi: str) -> Work | None:
        """The Crossref record of `doi`, or None if Crossref does not register it."""
        fetched = await self._http.get(f"{self._base}/works/{quote(doi, safe='/:()')}", params=self._polite() or None)
        if fetched is None:
            return None
        return parse_item((fetched.data or {}).get("message") or {})

    async def search(self, query: str, rows: int = 25) -> list[Work]:
        """Works matching `query` bibliographically (title, authors, venue), best first."""
        fetched = await self._http.get(
            f"{self._base}/works",
            params={"query.bibliographic": query[:1_000], "rows": min(rows, 100), "select": SELECT, **self._polite()},
        )
        items = ((fetched.data if fetched else None) or {}).get("message", {}).get("items") or []
        return [w for w in map(parse_item, items) if w is not None]
