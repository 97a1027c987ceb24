"""Indexing hosted libraries: one replica at a time per user, under a lease in the catalog.

Every change to a user's catalog raises its version (`Catalog.touch`); the replica that stored
it then claims the user's `r.<user>` record (compare-and-set) unless another replica holds it,
and indexes the library while the catalog is ahead of the index, or the index was written at
another `INDEX_VERSION` (a release that changes what a file turns into indexes it again, once).
The holder rewrites the record every `heartbeat_s` with its progress (what GET /library/status
shows, from any replica). A replica that stops gives the lease back unfinished; one that dies stops beating,
and after `lease_s` its lease counts as abandoned. Every `sweep_s` each replica takes over the
libraries left behind (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

from zocrates_retrieval.adapters.catalog import Catalog, Lease
from zocrates_retrieval.adapters.files import LibraryFiles
from zocrates_retrieval.adapters.zotero import Source
from zocrates_retrieval.domain.priority import ItemRef
from zocrates_retrieval.ingest import INDEX_VERSION, Ingestor, IngestProgress
from zocrates_retrieval.status import shown

log = structlog.get_logger(__name__)

FETCH_TIMEOUT_S = 300.0  # one uploaded file from the object store (100 MB at a slow few MB/s)
#: A hosted user's indexing lease: renewed every HEARTBEAT_S while a run goes (with its
#: progress); a holder silent for LEASE_S is presumed dead (replicas' clocks within seconds,
#: as NTP keeps them). Every SWEEP_S each replica takes over libraries left unindexed.
LEASE_S, HEARTBEAT_S, SWEEP_S = 30.0, 2.0, 10.0


def replica_name() -> str:
    """This process's name in the leases it holds: host, pid and a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class HostedIndexer:
    """This replica's indexing runs of hosted libraries, one task per user at most.

    `ingestor` is read when a run starts (it is None until the service has started), and
    `ingest_lock` is the service's: one ingest at a time per replica, local or hosted.
    `cited(user)` is the user's recently cited items, read when a run starts."""

    def __init__(
        self,
        ingest_lock: asyncio.Lock,
        closing: asyncio.Event,
        ingestor: Callable[[], Ingestor | None],
        cited: Callable[[str], Awaitable[list[ItemRef]]] | None = None,
    ):
        self.instance = replica_name()
        self.lease_s, self.heartbeat_s, self.sweep_s = LEASE_S, HEARTBEAT_S, SWEEP_S
        self.catalog: Catalog | None = None
        self.files: LibraryFiles | None = None
        self.runs: dict[str, asyncio.Task] = {}  # this replica's indexing runs, by user
        self._ingest_lock = ingest_lock
        self._closing = closing
        self._ingestor = ingestor
        self._cited = cited

    async def kick(self, user_id: str) -> None:
        """Bring a hosted user's index in line with their catalog, on whichever replica holds
        (or takes) the user's indexing lease. The catalog's version is raised first: a run
        going anywhere reads it again when it ends, so bursts of uploads coalesce into one
        more run and no change is left behind."""
        await self.catalog.touch(user_id)
        self._start_run(user_id)

    def _start_run(self, user_id: str) -> None:
        running = self.runs.get(user_id)
        if (running is None or running.done()) and not self._closing.is_set():
            self.runs[user_id] = asyncio.create_task(self._reconcile(user_id))

    def _running_users(self) -> set[str]:
        return {user for user, task in self.runs.items() if not task.done()}

    async def sweep(self) -> None:
        """Take over the libraries whose catalog changed since their last finished run and
        that nobody indexes (a replica stopped or died mid-run), now and every `sweep_s`."""
        while not self._closing.is_set():
            try:
                now = time.time()
                for user_id, run, _ in await self.catalog.pending(INDEX_VERSION):
                    # ours without a run going here: a write of ours was lost in a reconnect
                    mine = run.owner == self.instance and user_id not in self._running_users()
                    if mine or not run.held(now, self.lease_s):
                        self._start_run(user_id)
            except Exception as exc:  # noqa: BLE001 - the next sweep tries again
                log.warning("sweep of hosted libraries failed", error=str(exc))
            try:
                await asyncio.wait_for(self._closing.wait(), self.sweep_s)
            except TimeoutError:
                pass

    async def _reconcile(self, user_id: str) -> None:
        """Index the user's library here while its catalog is ahead of the index, holding the
        user's lease; without the lease (another replica runs) there is nothing to do here."""
        while not self._closing.is_set():
            lease = await self.catalog.claim(user_id, self.instance, self.lease_s)
            if lease is None:
                return  # another replica indexes this library and will see the new version
            version = await self.catalog.version(user_id)
            if lease.run.indexed(version, INDEX_VERSION):
                await self.catalog.beat(lease, release=True)
            else:
                await self._run_holding(lease, version)
            # Released: a kick that found the lease held raised the version before trying it.
            if self._closing.is_set() or lease.lost or await self.catalog.version(user_id) <= version:
                return

    async def _run_holding(self, lease: Lease, version: int) -> None:
        user_id = lease.user_id
        loop = asyncio.get_running_loop()

        def fetch(src: Source, scratch: Path) -> Path:  # runs in the ingest thread
            return asyncio.run_coroutine_threadsafe(self._fetch(src, scratch), loop).result(FETCH_TIMEOUT_S)

        progress = IngestProgress(user_id=user_id, source="hosted", state="running")
        await self.catalog.beat(lease, shown(progress))
        ended = asyncio.Event()
        heartbeat = asyncio.create_task(self._beat_while_running(lease, progress, ended))
        try:
            async with self._ingest_lock:
                ingestor = self._ingestor()
                if ingestor is None or ingestor.stop.is_set():
                    progress.state = "stopped"
                else:
                    sources, libraries, items = await self.catalog.sources(user_id)
                    known = await self.catalog.failures(user_id)
                    cited = await self._cited(user_id) if self._cited is not None else []
                    await asyncio.to_thread(
                        ingestor.ingest_sources,
                        sources,
                        user_id,
                        progress,
                        label="hosted",
                        libraries=libraries,
                        items=items,
                        fetch=fetch,
                        known_failures=known,
                        cited=cited,
                    )
                    if progress.state == "done":  # a stopped run saw only part of the library
                        # Conversion failures are kept with their content hash; a missing file is retried.
                        await self.catalog.set_failures(user_id, [f for f in progress.failures if f.content_hash])
        finally:
            ended.set()  # not cancel(): a beat cut off mid-write would leave the lease's revision stale
            await heartbeat
            # Stopped: not indexed through this version, so another replica's sweep takes over.
            finished = progress.state in ("done", "failed")
            through = (version, INDEX_VERSION) if finished else None
            await self.catalog.beat(lease, shown(progress), release=True, indexed_through=through)

    async def _beat_while_running(self, lease: Lease, progress: IngestProgress, ended: asyncio.Event) -> None:
        while True:
            try:
                await asyncio.wait_for(ended.wait(), self.heartbeat_s)
                return
            except TimeoutError:
                pass
            try:
                if not await self.catalog.beat(lease, shown(progress)):
                    log.warning("lost the indexing lease to another replica", user_id=lease.user_id)
                    return
            except Exception as exc:  # noqa: BLE001 - the next beat tries again within the lease
                log.warning("could not renew the indexing lease", user_id=lease.user_id, error=str(exc))

    async def _fetch(self, src: Source, scratch: Path) -> Path:
        """Copy an uploaded file out of the object store and check it is the one recorded."""
        if self.files is None:
            raise RuntimeError("no object store is connected")
        return await self.files.download_checked(src.object_name, scratch / f"{src.library_id}-{src.key}", src.sha256)
