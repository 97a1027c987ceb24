"""The discovery service: find papers online, leave out those the user owns, describe the rest.

One request (`discover`):
1. Each query is either identifiers (a pasted DOI, arXiv id or OpenAlex id: free singleton
   lookups, Crossref or Semantic Scholar when OpenAlex does not know it) or text (an OpenAlex
   search). When OpenAlex's daily budget is spent, or OpenAlex fails, the search falls back to
   Crossref, then Semantic Scholar, and a note says why.
2. The queries' results are interleaved (best of each query first) and merged by OpenAlex id,
   DOI, arXiv id and normalised title.
3. The novelty filter drops what the user owns (DOI, arXiv id, title >= 0.88), each with a reason.
4. The first `limit` new works are enriched: Unpaywall (legal PDF, licence, OA status) where
   OpenAlex has no PDF, Crossref (year, venue, abstract) where those are missing, and abstracts
   from Semantic Scholar, then PubMed.

Failures are explicit: with no internet the reply is an `unreachable` error, never invented
data; an enrichment that fails only leaves its fields empty. The notes of a search (demo mode,
spent budget, which fallback answered) are returned by `find`; `CandidatesFound` has no field for
them yet, so `discover` logs them and `health` reports the budget and mode.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
import structlog

from zocrates_contracts import (
    Candidate,
    CandidatesFound,
    CandidatesRechecked,
    DiscoveryRequested,
    DroppedCandidate,
    RecheckRequested,
    ServiceError,
)
from zocrates_contracts.identifiers import (
    QueryIdentifiers,
    arxiv_doi,
    arxiv_of_doi,
    identifiers_in_query,
)
from zocrates_contracts.messages import MAX_CANDIDATES
from zocrates_discovery.adapters.catalog import Catalog
from zocrates_discovery.adapters.http import (
    BudgetExhausted,
    HostPolicy,
    Http,
    ProviderError,
    Throttled,
    Unreachable,
    UpstreamTimeout,
)
from zocrates_discovery.adapters.providers.abstracts import AbstractBackfill
from zocrates_discovery.adapters.providers.crossref import Crossref
from zocrates_discovery.adapters.providers.openalex import OpenAlex
from zocrates_discovery.adapters.providers.pubmed import PubMed
from zocrates_discovery.adapters.providers.semanticscholar import SemanticScholar, paper_key
from zocrates_discovery.adapters.providers.unpaywall import Unpaywall
from zocrates_discovery.adapters.zotero_library import LibraryReadError, database_path, read_library_items
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.domain.contact import requester_contact
from zocrates_discovery.domain.novelty import LibraryIndex, LibraryItem, filter_novel, synced_identity
from zocrates_discovery.domain.works import Work, interleave, merge

log = structlog.get_logger("zocrates.discovery")

DEMO_NOTE = (
    "OpenAlex runs in demo mode (no API key): a small daily budget shared by this machine, about "
    "100 searches. Set ZOCRATES_DISCOVERY_OPENALEX_API_KEY (free at openalex.org) for about 1,000."
)
#: Time kept back from a request's deadline for enrichment to give up and the reply to travel.
DEADLINE_MARGIN_S = 1.0


@dataclass
class DiscoveryResult:
    """What a search found: new candidates, dropped ones with reasons, notes for the user, or an error."""

    candidates: list[Candidate] = field(default_factory=list)
    dropped: list[DroppedCandidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: ServiceError | None = None


@dataclass
class _Library:
    index: LibraryIndex
    stamp: tuple | None = None  # (size, mtime_ns) of zotero.sqlite, or ("kv", revision) of the catalog
    loaded_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    load_s: float = 0.0


def _policies(settings: DiscoverySettings) -> dict[str, HostPolicy]:
    """Per-host pacing: well inside each API's published limits."""
    rates = {
        settings.openalex_url: HostPolicy(rate_per_s=10, concurrency=8),  # allows 100/s
        settings.crossref_url: HostPolicy(rate_per_s=5, concurrency=2),  # public pool
        settings.unpaywall_url: HostPolicy(rate_per_s=10, concurrency=4),
        settings.semantic_scholar_url: HostPolicy(rate_per_s=1, concurrency=1),  # 1/s with or without key
        settings.pubmed_url: HostPolicy(rate_per_s=3, concurrency=2),  # 3/s without an NCBI key
    }
    return {urlsplit(url).hostname or url: policy for url, policy in rates.items()}


def _as_service_error(exc: ProviderError, what: str = "OpenAlex") -> ServiceError:
    if isinstance(exc, Unreachable):
        return ServiceError(
            code="unreachable",
            service="discovery",
            message=(f"{what} is unreachable from this machine: {exc.reason}. Online discovery needs internet access."),
        )
    message = str(exc)
    if getattr(exc, "__notes__", None):  # what the fallback searches answered
        message += f"; the fallback searches failed too ({'; '.join(exc.__notes__)})"
    if isinstance(exc, UpstreamTimeout):
        return ServiceError(code="timeout", service="discovery", message=message)
    if isinstance(exc, (BudgetExhausted, Throttled)):
        return ServiceError(code="overloaded", service="discovery", message=message)
    return ServiceError(code="not_available", service="discovery", message=message)


class DiscoveryService:
    """Online discovery for the bus handler: `start`, then `discover` / `recheck`, `health`, `close`."""

    def __init__(self, settings: DiscoverySettings, *, http: httpx.AsyncClient | None = None):
        self.settings = settings
        # The lab-hosted libraries' catalog (KV bucket, written by retrieval), set by the bus
        # wiring: every discovery replica reads the same synced items from it.
        self.catalog = None
        self._client = http
        self._owns_client = http is None
        self._libraries: dict[str, _Library] = {}
        self._library_error: str | None = None
        self._library_lock = asyncio.Lock()
        self._started = False

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Open the HTTP client and load the local library's identifier index (if a Zotero dir is set)."""
        s = self.settings
        if self._client is None:
            self._client = httpx.AsyncClient(
                headers={"User-Agent": s.user_agent},
                timeout=httpx.Timeout(s.http_timeout_s, connect=5.0),
                follow_redirects=True,
            )
        self.http = Http(
            self._client,
            policies=_policies(s),
            attempts=s.retries,
            wait_initial=s.retry_wait_initial_s,
            wait_max=s.retry_wait_max_s,
            max_retry_after=s.max_retry_after_s,
            cache_ttl=s.cache_ttl_s,
            cache_size=s.cache_size,
        )
        self.openalex = OpenAlex(self.http, s)
        self.crossref = Crossref(self.http, s)
        self.unpaywall = Unpaywall(self.http, s)
        self.s2 = SemanticScholar(self.http, s)
        self.abstracts = AbstractBackfill(self.s2, PubMed(self.http, s), s.abstract_timeout_s)
        self._started = True
        if s.zotero_dir is not None:
            await self._library_for(s.local_user_id)
        if self.openalex.demo:
            log.warning("openalex demo mode", note=DEMO_NOTE)

    async def close(self) -> None:
        """Close the HTTP client if this service opened it."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None
        self._started = False

    def health(self) -> dict:
        """Readiness and what the user should know: OpenAlex key or demo mode, budget, library size."""
        local = self._libraries.get(self.settings.local_user_id)
        openalex = getattr(self, "openalex", None)
        exhausted = openalex is not None and openalex.budget_exhausted()
        return {
            "status": "ok" if self._started else "starting",
            "openalex_key": self.settings.openalex_api_key is not None,
            "openalex_mode": "keyed" if self.settings.openalex_api_key is not None else "demo",
            "openalex_budget": (f"exhausted until {openalex.exhausted_until:%H:%M} UTC" if exhausted else "ok"),
            "openalex_remaining_usd": openalex.remaining_usd if openalex else None,
            "unpaywall": self.settings.contact_email is not None,
            "library_items": local.index.size if local else 0,
            "library_loaded_at": local.loaded_at.isoformat() if local else None,
            "library_load_s": round(local.load_s, 3) if local else None,
            "library_error": self._library_error,
            "notes": [DEMO_NOTE] if self.settings.openalex_api_key is None else [],
        }

    # --- the user's library ---------------------------------------------------------------

    async def connect_catalog(self, js, replicas: int = 1) -> None:
        """Read hosted libraries from the catalog bucket (created here if retrieval has not yet)."""
        self.catalog = await Catalog.open(js, replicas)

    def set_library(self, user_id: str, items: list[LibraryItem]) -> None:
        """Install the library of a user whose items reach us some other way (a hosted, synced library)."""
        self._libraries[user_id] = _Library(LibraryIndex(items, self.settings.title_similarity))

    async def _hosted_library(self, user_id: str) -> LibraryIndex | None:
        """A hosted user's index, built from the synced items in the library catalog that
        retrieval keeps in KV, so every replica sees the same library; rebuilt when a sync page
        was applied since (the revision of the user's `l.<user>` key says so)."""
        cached = self._libraries.get(user_id)
        if self.catalog is None:
            return cached.index if cached else None
        revision = await self.catalog.revision(user_id)
        if revision is None:
            return cached.index if cached else None  # never synced (or installed by set_library)
        if cached is not None and cached.stamp == ("kv", revision):
            return cached.index
        items = [synced_identity(item) for item in await self.catalog.owned_items(user_id)]
        index = await asyncio.to_thread(LibraryIndex, items, self.settings.title_similarity)
        self._libraries[user_id] = _Library(index, ("kv", revision))
        log.info("hosted library loaded", user_id=user_id, items=index.size)
        return index

    async def _library_for(self, user_id: str) -> LibraryIndex | None:
        """`user_id`'s index; the local user's is re-read when zotero.sqlite changed since."""
        s = self.settings
        if user_id != s.local_user_id or s.zotero_dir is None:
            return await self._hosted_library(user_id)
        db = database_path(s.zotero_dir)
        async with self._library_lock:
            try:
                st = db.stat()
                stamp = (st.st_size, st.st_mtime_ns)
            except OSError as exc:
                self._library_error = f"cannot read the Zotero library at {db}: {exc.strerror or exc}"
                return None
            current = self._libraries.get(user_id)
            if current is not None and current.stamp == stamp:
                return current.index
            started = time.perf_counter()
            try:
                items = await asyncio.to_thread(read_library_items, db)
            except LibraryReadError as exc:
                self._library_error = str(exc)
                log.warning("library not loaded", error=str(exc))
                return current.index if current else None
            index = await asyncio.to_thread(LibraryIndex, items, s.title_similarity)
            self._libraries[user_id] = _Library(index, stamp, load_s=time.perf_counter() - started)
            self._library_error = None
            log.info("library loaded", items=index.size, seconds=round(time.perf_counter() - started, 3))
            return index

    # --- discovery ------------------------------------------------------------------------

    async def discover(self, request: DiscoveryRequested) -> CandidatesFound:
        """Answer a `DiscoveryRequested`: new candidates, dropped ones with reasons, or an explicit error."""
        with requester_contact(request.contact_email):
            result = await self.find(
                request.queries, request.limit, request.user_id, deadline=request.deadline, from_year=request.from_year
            )
        if result.notes:
            log.info("discovery notes", turn_id=request.turn_id, notes=result.notes)
        return CandidatesFound(
            **request.reply_fields(),
            candidates=result.candidates[:MAX_CANDIDATES],
            dropped=result.dropped[:MAX_CANDIDATES],
            notes=result.notes[:20],
            error=result.error,
        )

    async def find(
        self,
        queries: list[str],
        limit: int,
        user_id: str,
        deadline: datetime | None = None,
        from_year: int | None = None,
    ) -> DiscoveryResult:
        """Search `queries` (works published in `from_year` or later, when given), drop what
        `user_id` owns, enrich the first `limit` new works."""
        if not self._started:
            raise RuntimeError("DiscoveryService.start() must be awaited before find()")
        result = DiscoveryResult()
        if self.openalex.demo:
            result.notes.append(DEMO_NOTE)
        queries = [q.strip() for q in queries if q and q.strip()]
        if not queries:
            result.error = ServiceError(
                code="invalid", service="discovery", message="The discovery request has no query text."
            )
            return result
        budget = None
        if deadline is not None:
            budget = (deadline - datetime.now(UTC)).total_seconds() - DEADLINE_MARGIN_S
            if budget <= 0:
                result.error = ServiceError(
                    code="timeout", service="discovery", message="The discovery request arrived after its deadline."
                )
                return result
        started = time.monotonic()
        try:
            async with asyncio.timeout(budget):
                outcomes = await asyncio.gather(
                    *(self._works_for(q, result.notes, from_year) for q in queries), return_exceptions=True
                )
        except TimeoutError:
            result.error = ServiceError(
                code="timeout", service="discovery", message=f"The online search did not finish within {budget:.0f} s."
            )
            return result
        found = [o for o in outcomes if isinstance(o, list)]
        failures = [o for o in outcomes if isinstance(o, BaseException)]
        for failure in failures:
            if not isinstance(failure, ProviderError):
                raise failure
        if failures and not found:
            result.error = _as_service_error(failures[0])
            return result
        for failure in failures:
            result.notes.append(f"One query could not be searched: {failure}")

        works = merge(interleave(found))
        library = await self._library_for(user_id)
        if library is None:
            result.notes.append(
                "Your library is not known to the discovery service, so papers you already own could not be left out."
            )
        by_id = {w.candidate_id(): w for w in works}
        novel, result.dropped = filter_novel((w.to_candidate() for w in works), library)
        chosen = [by_id[c.candidate_id] for c in novel[:limit]]
        remaining = None if budget is None else budget - (time.monotonic() - started)
        await self._enrich(chosen, remaining)
        result.candidates = [w.to_candidate() for w in chosen]
        result.notes = list(dict.fromkeys(result.notes))
        return result

    async def recheck(self, user_id: str, candidates: list[Candidate]) -> list[DroppedCandidate]:
        """At import time: which of `candidates` `user_id` owns by now (re-reading a changed library)."""
        library = await self._library_for(user_id)
        if library is None:
            return []
        return filter_novel(candidates, library)[1]

    async def answer_recheck(self, request: RecheckRequested) -> CandidatesRechecked:
        """Answer a `RecheckRequested`: the candidates still new to the user, and those owned by now."""
        dropped = await self.recheck(request.user_id, list(request.candidates))
        owned = {d.candidate.candidate_id for d in dropped}
        return CandidatesRechecked(
            **request.reply_fields(),
            candidates=[c for c in request.candidates if c.candidate_id not in owned],
            dropped=dropped,
        )

    async def _works_for(self, query: str, notes: list[str], from_year: int | None = None) -> list[Work]:
        ids = identifiers_in_query(query)
        if ids:
            return await self._lookup(ids, notes)
        works = await self._search(query, notes, from_year)
        # OpenAlex filters by date itself; the fallbacks' results are filtered here.
        return [w for w in works if not from_year or (w.year or 0) >= from_year]

    async def _search(self, query: str, notes: list[str], from_year: int | None) -> list[Work]:
        per_query = self.settings.per_query_results
        if self.openalex.budget_exhausted():
            primary: ProviderError = BudgetExhausted(
                urlsplit(self.settings.openalex_url).hostname or "OpenAlex", self.openalex.exhausted_until
            )
        else:
            try:
                return await self.openalex.search(query, per_query, from_year)
            except ProviderError as exc:
                primary = exc
        return await self._fallback_search(query, primary, notes)

    async def _fallback_search(self, query: str, primary: ProviderError, notes: list[str]) -> list[Work]:
        """Crossref, then Semantic Scholar, when OpenAlex cannot search; raises `primary` if both fail."""
        failed = []
        for name, search in (("Crossref", self.crossref.search), ("Semantic Scholar", self.s2.search)):
            try:
                works = await search(query, self.settings.per_query_results)
            except ProviderError as exc:
                failed.append(f"{name}: {exc}")
                continue
            notes.append(f"{primary}; these results come from {name} instead.")
            return works
        log.warning("all searches failed", openalex=str(primary), fallbacks=failed)
        primary.add_note("; ".join(failed))
        raise primary

    async def _lookup(self, ids: QueryIdentifiers, notes: list[str]) -> list[Work]:
        lookups = [self._by_doi(d) for d in ids.dois] + [self._by_doi(arxiv_doi(a)) for a in ids.arxiv_ids]
        lookups += [self.openalex.by_id(w) for w in ids.openalex_ids]
        names = [*ids.dois, *(f"arXiv:{a}" for a in ids.arxiv_ids), *ids.openalex_ids]
        outcomes = await asyncio.gather(*lookups, return_exceptions=True)
        works = []
        for name, outcome in zip(names, outcomes):
            if isinstance(outcome, ProviderError):
                if len(names) == 1:
                    raise outcome
                notes.append(f"{name} could not be looked up: {outcome}")
            elif isinstance(outcome, BaseException):
                raise outcome
            elif outcome is None:
                notes.append(f"No work with the identifier {name} was found.")
            else:
                works.append(outcome)
        return works

    async def _by_doi(self, doi: str) -> Work | None:
        """OpenAlex (free singleton), else Crossref, else Semantic Scholar for arXiv DOIs."""
        error: ProviderError | None = None
        try:
            work = await self.openalex.by_doi(doi)
            if work is not None:
                return work
        except ProviderError as exc:
            error = exc
        arxiv_id = arxiv_of_doi(doi)
        try:
            if arxiv_id:
                work = await self.s2.paper(paper_key(None, arxiv_id))
            else:
                work = await self.crossref.work(doi)
        except ProviderError:
            work = None
        if work is None and error is not None:
            raise error
        return work

    # --- enrichment -----------------------------------------------------------------------

    async def _enrich(self, works: list[Work], budget: float | None) -> None:
        """Fill PDF links, licences, years, venues and abstracts where the search left gaps.

        Runs within `budget` seconds; what is not filled by then stays empty.
        """
        if not works:
            return
        try:
            async with asyncio.timeout(budget):
                await asyncio.gather(
                    *(self._open_access(w) for w in works), *(self._crossref_backfill(w) for w in works)
                )
                await self.abstracts.fill(works)
        except TimeoutError:
            log.info("enrichment cut short by the deadline", works=len(works))

    async def _open_access(self, work: Work) -> None:
        if not work.doi or work.pdf_url or arxiv_of_doi(work.doi) or not self.unpaywall.enabled:
            return
        try:
            oa = await self.unpaywall.lookup(work.doi)
        except ProviderError as exc:
            log.info("unpaywall skipped", doi=work.doi, reason=str(exc))
            return
        if oa is not None:
            work.pdf_url = work.pdf_url or oa.pdf_url
            work.license = work.license or oa.license
            work.oa_status = work.oa_status or oa.oa_status

    async def _crossref_backfill(self, work: Work) -> None:
        if (
            not work.doi
            or work.source == "crossref"
            or arxiv_of_doi(work.doi)
            or (work.year and work.venue and work.abstract)
        ):
            return
        try:
            record = await self.crossref.work(work.doi)
        except ProviderError as exc:
            log.info("crossref backfill skipped", doi=work.doi, reason=str(exc))
            return
        if record is not None:
            work.year = work.year or record.year
            work.venue = work.venue or record.venue
            work.abstract = work.abstract or record.abstract
            work.authors = work.authors or record.authors
