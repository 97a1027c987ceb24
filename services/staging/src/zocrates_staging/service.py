"""The staging service's domain: turn a batch of selected candidates into staged PDFs.

For each candidate with a PDF URL: download it through the SSRF guard (download.py), check
it more deeply in a resource-limited subprocess (adapters/pdfcheck.py), store it for the user who
asked (store.py). Each candidate ends as one `StagedFile`: `staged` (object name, size,
sha256), `no_pdf`, `failed` with the reason, or `duplicate` when another candidate of the
batch has the same PDF URL (fetched once; the duplicate points at the same object).

Staged ids are derived from (user, batch, candidate), so a redelivered request overwrites
what an interrupted attempt stored instead of leaving a second copy behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter

import httpx
import structlog

from zocrates_contracts import BatchStaged, Candidate, StagedFile, StagingRequested
from zocrates_runtime.staged_store import StagedStore
from zocrates_staging.adapters.download import Rejected, download_pdf, make_client
from zocrates_staging.adapters.guard import Resolver
from zocrates_staging.adapters.pdfcheck import available_parser, check_pdf, minimal_pdf
from zocrates_staging.config import StagingSettings
from zocrates_staging.domain.files import duplicate, failed, staged_id_for, suggested_filename, url_key

log = structlog.get_logger("zocrates.staging")

#: A download in the work directory older than this cannot be in progress: a crash left it.
STALE_DOWNLOAD_S = 3600


class StagingService:
    """Stages PDFs for import; `transport` and `resolver` are for tests (the guard wraps both)."""

    def __init__(
        self,
        settings: StagingSettings,
        store: StagedStore,
        *,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self._resolver = resolver
        self._transport = transport
        self._parser = available_parser(settings.pdf_check)
        self._downloads = asyncio.Semaphore(settings.concurrency)
        self._checks = asyncio.Semaphore(settings.check_concurrency)
        self._client: httpx.AsyncClient | None = None
        self._expiry: asyncio.Task | None = None
        self._in_flight = 0
        self._counts: Counter[str] = Counter()

    async def start(self) -> None:
        """Prepare the work directory and the guarded client; bind the store; start expiry."""
        s = self.settings
        if s.pdf_check not in ("auto", "off") and self._parser is None:
            raise RuntimeError(
                f"ZOCRATES_STAGING_PDF_CHECK={s.pdf_check} but {s.pdf_check} is "
                "not installed; install it, or use auto or off"
            )
        s.work_dir.mkdir(parents=True, exist_ok=True)
        stale = time.time() - STALE_DOWNLOAD_S
        for leftover in s.work_dir.glob(".download-*.part"):
            if leftover.stat().st_mtime < stale:
                leftover.unlink(missing_ok=True)
        if self._parser:
            await self._self_test()
        await self.store.expire()  # also creates or binds the bucket: fail at start, not later
        if s.unsafe_allow_addresses:
            log.warning(
                "SSRF guard lets these loopback addresses through (tests only)",
                addresses=[str(a) for a in s.unsafe_allow_addresses],
            )
        self._client = make_client(
            transport=self._transport,
            resolver=self._resolver,
            allowed_ports=s.allowed_ports,
            allow_addresses=s.unsafe_allow_addresses,
            connect_timeout=s.connect_timeout_s,
            read_timeout=s.read_timeout_s,
            user_agent=s.user_agent,
        )
        self._expiry = asyncio.create_task(self._expire_forever(), name="staging-expiry")

    async def _self_test(self) -> None:
        """Check a known-good PDF once, so a checker that cannot run fails the start, not
        every later file."""
        s = self.settings
        probe = s.work_dir / f".selftest-{os.getpid()}.pdf"
        probe.write_bytes(minimal_pdf())
        try:
            reason = await check_pdf(
                probe,
                parser=self._parser,
                timeout=max(s.check_timeout_s, 30.0),
                cpu_s=s.check_cpu_s,
                memory_mb=s.check_memory_mb,
                max_pages=s.check_max_pages,
                max_inflated_mb=s.check_max_inflated_mb,
            )
        finally:
            probe.unlink(missing_ok=True)
        if reason:
            raise RuntimeError(
                f"the {self._parser} PDF check fails on a valid PDF ({reason}); raise "
                "ZOCRATES_STAGING_CHECK_MEMORY_MB or set ZOCRATES_STAGING_PDF_CHECK=off"
            )

    async def stage(self, request: StagingRequested) -> BatchStaged:
        """Stage every candidate of the batch; one `StagedFile` per candidate, in order.

        A refused or failed download is a `failed` record with its reason, never an
        exception. Only a failing store raises (transient: the bus redelivers, and the
        derived staged ids make the retry overwrite rather than duplicate).
        """
        if self._client is None:
            raise RuntimeError("StagingService.stage called before start()")
        candidates = request.candidates
        files: list[StagedFile | None] = [None] * len(candidates)
        groups: dict[str, list[int]] = {}
        for i, candidate in enumerate(candidates):
            if candidate.pdf_url and candidate.pdf_url.strip():
                groups.setdefault(url_key(candidate.pdf_url), []).append(i)
            else:
                files[i] = StagedFile(
                    candidate_id=candidate.candidate_id,
                    status="no_pdf",
                    reason="no open-access PDF URL is known for this paper",
                )
        self._in_flight += 1
        try:
            async with asyncio.TaskGroup() as group:
                tasks = {
                    key: group.create_task(self._stage_one(request, candidates[idx[0]], key))
                    for key, idx in groups.items()
                }
        except ExceptionGroup as failed:  # a store failure: the first one is the story
            raise failed.exceptions[0] from failed
        finally:
            self._in_flight -= 1
        for key, indexes in groups.items():
            first = tasks[key].result()
            files[indexes[0]] = first
            for i in indexes[1:]:
                files[i] = duplicate(first, candidates[i].candidate_id)
        done = [f for f in files if f is not None]
        self._counts.update(f.status for f in done)
        log.info("batch staged", batch_id=request.batch_id, **Counter(f.status for f in done))
        return BatchStaged(**request.reply_fields(), batch_id=request.batch_id, files=done)

    async def _stage_one(self, request: StagingRequested, candidate: Candidate, url: str) -> StagedFile:
        s = self.settings
        assert self._client is not None
        async with self._downloads:
            try:
                download = await download_pdf(
                    self._client,
                    url,
                    s.work_dir,
                    max_bytes=s.max_bytes,
                    max_redirects=s.max_redirects,
                    total_timeout=s.total_timeout_s,
                )
            except Rejected as exc:
                return failed(candidate, exc.reason)
            except Exception as exc:  # noqa: BLE001 - a bug here fails one file, not the batch
                log.exception("download failed unexpectedly", candidate_id=candidate.candidate_id)
                return failed(candidate, f"internal error while downloading ({type(exc).__name__})")
        try:
            if self._parser:
                async with self._checks:
                    reason = await check_pdf(
                        download.path,
                        parser=self._parser,
                        timeout=s.check_timeout_s,
                        cpu_s=s.check_cpu_s,
                        memory_mb=s.check_memory_mb,
                        max_pages=s.check_max_pages,
                        max_inflated_mb=s.check_max_inflated_mb,
                    )
                if reason:
                    return failed(candidate, reason)
            staged_id = staged_id_for(request.user_id, request.batch_id, candidate.candidate_id)
            info = await self.store.put(
                request.user_id,
                staged_id,
                download.path,
                {
                    "candidate_id": candidate.candidate_id,
                    "batch_id": request.batch_id,
                    "filename": suggested_filename(candidate),
                    "content_type": "application/pdf",
                    "source": download.final_url[:1000],
                },
            )
            if info.sha256 != download.sha256:
                raise RuntimeError(f"staged file {staged_id} changed between download and store")
            return StagedFile(
                candidate_id=candidate.candidate_id,
                status="staged",
                object_name=staged_id,
                sha256=info.sha256,
                size=info.size,
            )
        finally:
            download.path.unlink(missing_ok=True)

    def health(self) -> dict:
        """Readiness and counters for the health responder."""
        return {
            "status": "ok" if self._client is not None else "starting",
            "capability": "staging",
            "pdf_check": self._parser or "off",
            "batches_in_flight": self._in_flight,
            "files": dict(self._counts),
        }

    async def close(self) -> None:
        """Stop expiry and close the client; idempotent."""
        if self._expiry is not None:
            self._expiry.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._expiry
            self._expiry = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _expire_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.expire_every_s)
            try:
                removed = await self.store.expire()
                if removed:
                    log.info("expired staged files removed", count=removed)
            except Exception:  # noqa: BLE001 - try again next round; the bucket TTL also applies
                log.exception("expiring staged files failed")
