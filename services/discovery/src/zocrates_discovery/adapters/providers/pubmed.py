"""NCBI E-utilities (https://www.ncbi.nlm.nih.gov/books/NBK25500/): PubMed abstracts by PMID."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from zocrates_discovery.adapters.http import Http
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.domain.contact import contact_email


def _abstract_of(article: ET.Element) -> str | None:
    parts = []
    for node in article.findall("./MedlineCitation/Article/Abstract/AbstractText"):
        text = " ".join("".join(node.itertext()).split())
        if text:
            label = node.get("Label")
            parts.append(f"{label.capitalize()}: {text}" if label else text)
    return "\n".join(parts) or None


def parse_abstracts(xml_text: str) -> dict[str, str]:
    """PMID -> abstract for every article with one in an efetch PubMed XML answer (labels kept)."""
    try:
        root = ET.fromstring(xml_text.encode())
    except ET.ParseError:
        return {}
    found = {}
    for article in root.iter("PubmedArticle"):
        pmid = article.findtext("./MedlineCitation/PMID")
        abstract = _abstract_of(article)
        if pmid and abstract:
            found[pmid.strip()] = abstract
    return found


class PubMed:
    def __init__(self, http: Http, settings: DiscoverySettings):
        self._http = http
        self._base = settings.pubmed_url.rstrip("/")
        self._configured_email = settings.contact_email

    def _identity(self) -> dict[str, str]:
        # NCBI asks every client to name itself (tool) and a contact (email).
        email = contact_email(self._configured_email)
        return {"tool": "zocrates", **({"email": email} if email else {})}

    async def abstracts(self, pmids: list[str], timeout: float | None = None) -> dict[str, str]:
        """PMID -> abstract for those of `pmids` PubMed has an abstract for (one efetch request)."""
        if not pmids:
            return {}
        fetched = await self._http.get(
            f"{self._base}/efetch.fcgi",
            params={"db": "pubmed", "id": ",".join(pmids[:200]), "retmode": "xml", **self._identity()},
            timeout=timeout,
            parse="text",
        )
        return parse_abstracts(fetched.data) if fetched else {}
