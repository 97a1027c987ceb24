"""Abstract backfill for works OpenAlex has no abstract for: Semantic Scholar, then PubMed.

Each source is asked once for all works that need it (Semantic Scholar's batch endpoint, one
PubMed efetch for all PMIDs) and gets `abstract_timeout_s` (2 s); a slow or failing source is
skipped, never fatal. When neither has an abstract the candidate keeps its keywords and no
abstract: publisher pages are never scraped and nothing is made up.
"""

from __future__ import annotations

import asyncio

import structlog

from zocrates_discovery.adapters.http import ProviderError
from zocrates_discovery.adapters.providers.pubmed import PubMed
from zocrates_discovery.adapters.providers.semanticscholar import SemanticScholar, paper_key
from zocrates_discovery.domain.works import Work

log = structlog.get_logger("zocrates.discovery.abstracts")


class AbstractBackfill:
    def __init__(self, s2: SemanticScholar, pubmed: PubMed, timeout_s: float = 2.0):
        self._s2 = s2
        self._pubmed = pubmed
        self._timeout = timeout_s

    async def fill(self, works: list[Work]) -> dict[str, int]:
        """Give abstracts to those of `works` that lack one; returns how many each source gave."""
        counts = {"semanticscholar": 0, "pubmed": 0}
        missing = [w for w in works if not w.abstract]
        keyed = [(w, key) for w in missing if (key := paper_key(w.doi, w.arxiv_id))]
        if keyed:
            papers = (
                await self._ask(
                    "semanticscholar",
                    self._s2.papers(
                        [key for _, key in keyed], fields="title,abstract,externalIds", timeout=self._timeout
                    ),
                )
                or []
            )
            for (work, _), paper in zip(keyed, papers):
                if paper is None:
                    continue
                work.pmid = work.pmid or paper.pmid  # lets PubMed answer for it below
                if paper.abstract:
                    work.abstract = paper.abstract
                    counts["semanticscholar"] += 1
        by_pmid = {w.pmid: w for w in missing if not w.abstract and w.pmid}
        if by_pmid:
            found = await self._ask("pubmed", self._pubmed.abstracts(list(by_pmid), timeout=self._timeout)) or {}
            for pmid, text in found.items():
                if pmid in by_pmid:
                    by_pmid[pmid].abstract = text
                    counts["pubmed"] += 1
        return counts

    async def _ask(self, source: str, call):
        try:
            async with asyncio.timeout(self._timeout):
                return await call
        except (TimeoutError, ProviderError) as exc:
            log.info("abstract source skipped", source=source, reason=str(exc) or "timeout")
            return None
