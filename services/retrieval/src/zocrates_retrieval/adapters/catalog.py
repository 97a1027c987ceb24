"""The lab-hosted library's catalog: synced Zotero metadata per user, the uploaded files'
records, and where indexing each library stands, shared by every retrieval replica.

In the hosted deployment there is no `zotero.sqlite` beside the service: the researcher's
plugin sends the library's metadata in pages (`LibrarySyncRequested`) and uploads each
attachment file through the gateway into the `zocrates_library` object store
(`AttachmentUploaded` is the claim-check). Any retrieval replica may pull any of these
requests, so what arrived is kept in the `zocrates_library_catalog` JetStream KV bucket, never
in one replica's memory or disk, and turned into the same `Source`s the Zotero reader
produces, so one ingest path indexes both. Keys (the user is the second token of each, so
every read names the user and one user's catalog is invisible to another's):

    i.<user>.<library>.<key>      a synced item: {"sync_id", "item"}   (discovery reads these too)
    t.<user>.<library>            the library's collection tree: {"collections": [SyncedCollection]}
    f.<user>.<library>.<key>      the uploaded file of an attachment item
    s.<user>.<library>.<sync_id>  which pages of a sync arrived (compare-and-set)
    x.<user>.<library>.<key>      a conversion failure with its content hash (not converted again)
    l.<user>                      the last sync page applied (rewritten on each page)
    v.<user>                      the catalog's version: rewritten on every change to index
    r.<user>                      indexing: which replica runs it (a lease with a heartbeat), the
                                  version the last finished run indexed, and its progress
    c.<user>                      the items cited in the user's recent answers, the most recent
                                  first (`MAX_CITED`): their files are converted early. Kept for
                                  every user, the local one too (compare-and-set)

Applying a page is idempotent: a redelivered page changes nothing more. Reads list keys by a
subject wildcard the server filters (`zocrates_runtime.kv.latest_entries`), never by reading
every key.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Iterable
from dataclasses import asdict, dataclass, field, replace

import nats.js.errors
from nats.js.kv import KeyValue

from zocrates_contracts import CatalogEntry, LibrarySyncRequested, SyncedCollection, SyncedItem
from zocrates_contracts.subjects import (
    LIBRARY_CATALOG_BUCKET,
    catalog_item_key,
    catalog_synced_key,
)
from zocrates_retrieval.adapters.zotero import Source, abstract_source, synced_item_meta
from zocrates_retrieval.domain.priority import MAX_CITED, Cited, ItemRef, merge_cited
from zocrates_retrieval.ingest import Failure
from zocrates_runtime import stores
from zocrates_runtime.bus import retrying
from zocrates_runtime.kv import latest_entries

MISSING = (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError)
#: Sync records older than this are dropped when a sync completes (a sync takes minutes).
SYNC_RECORD_DAYS = 7
#: KV writes in flight at once while applying a page or a run's failures.
WRITES_IN_FLIGHT = 64


@dataclass(frozen=True)
class SyncOutcome:
    stored: int
    deleted: int
    needs_upload: list[str]
    complete: bool
    orphaned_objects: list[str]  # files of removed attachments: delete them from the bucket


@dataclass(frozen=True)
class UploadOutcome:
    accepted: bool
    unchanged: bool = False
    replaced_object: str | None = None  # the previous version's object, now unreferenced
    reason: str = ""
    orphaned_object: str | None = None  # refused because the item went away meanwhile: delete it


@dataclass(frozen=True)
class CatalogCounts:
    items: int = 0
    attachments: int = 0
    uploaded: int = 0
    awaiting_upload: int = 0
    last_sync_at: float | None = None


@dataclass
class IndexRun:
    """The `r.<user>` record: who indexes the user's library now, and how far it got."""

    owner: str | None = None  # the replica holding the lease, None when no run is going
    heartbeat_at: float = 0.0  # the owner rewrites the record every few seconds while it runs
    indexed_through: int = 0  # the catalog version (revision of `v.<user>`) the last finished run read
    index_version: str = ""  # the `INDEX_VERSION` it indexed at ("": a release before this field)
    progress: dict | None = None  # the last run's `IngestProgress`, as GET /library/status shows it

    def indexed(self, version: int, index_version: str) -> bool:
        """Whether the last finished run indexed catalog `version` at `index_version`."""
        return version <= self.indexed_through and self.index_version == index_version

    def held(self, now: float, lease_s: float) -> bool:
        """A run is going; a record whose owner stopped beating for `lease_s` is abandoned."""
        return self.owner is not None and now - self.heartbeat_at < lease_s


@dataclass
class Lease:
    """This replica's claim on indexing one user's library (the record's KV revision)."""

    user_id: str
    owner: str
    revision: int
    run: IndexRun = field(default_factory=IndexRun)
    lost: bool = False  # another replica took over: this one stops writing the record


async def open_catalog_kv(js, replicas: int = 1) -> KeyValue:
    """The catalog bucket, created on first use (idempotent; every replica may race to it)."""
    return await stores.key_value(js, LIBRARY_CATALOG_BUCKET, replicas)


async def bounded(calls: Iterable[Awaitable]) -> list:
    """Await `calls` with at most WRITES_IN_FLIGHT at a time."""
    gate = asyncio.Semaphore(WRITES_IN_FLIGHT)

    async def one(call):
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


class Catalog:
    """Synced metadata, uploaded-file records and indexing state of every hosted user, in KV."""

    def __init__(self, kv: KeyValue):
        self.kv = kv
        self._counts: dict[str, tuple[int, CatalogCounts]] = {}  # user -> (catalog version, counts)

    @classmethod
    async def open(cls, js, replicas: int = 1) -> Catalog:
        return cls(await open_catalog_kv(js, replicas))

    # --- KV primitives ----------------------------------------------------------------------

    async def _get(self, key: str):
        try:
            return await retrying(lambda: self.kv.get(key), what=f"read {key}")
        except MISSING:
            return None

    async def _get_json(self, key: str) -> dict | None:
        entry = await self._get(key)
        return json.loads(entry.value) if entry is not None and entry.value else None

    async def _put(self, key: str, value: dict) -> int:
        data = json.dumps(value).encode()
        return await retrying(lambda: self.kv.put(key, data), what=f"write {key}")

    async def _delete(self, key: str) -> None:
        await retrying(lambda: self.kv.delete(key), what=f"delete {key}")

    async def _cas(self, key: str, value: dict, revision: int) -> int:
        """Write `value` only if `key` is still at `revision` (0: absent); raises
        KeyWrongLastSequenceError when another writer got there first."""
        data = json.dumps(value).encode()
        if revision == 0:
            return await self.kv.create(key, data)
        return await self.kv.update(key, data, last=revision)

    async def _json_entries(self, pattern: str) -> dict[tuple[str, ...], dict]:
        """Entries under `pattern` by their key's tokens after the user: (library, key) or ()."""
        return {tuple(e.key.split(".")[2:]): json.loads(e.value) for e in await latest_entries(self.kv, pattern)}

    async def _items(self, user_id: str, library_id: str = "*") -> dict[tuple[str, str], dict]:
        """(library, key) -> {"sync_id", "item"} of the user's synced items (`item` as stored:
        a `SyncedItem`'s JSON without its defaults)."""
        return await self._json_entries(f"i.{user_id}.{library_id}.*")

    async def _files(self, user_id: str, library_id: str = "*") -> dict[tuple[str, str], dict]:
        return await self._json_entries(f"f.{user_id}.{library_id}.*")

    # --- sync -------------------------------------------------------------------------------

    async def apply_sync(self, user_id: str, page: LibrarySyncRequested) -> SyncOutcome:
        """Store one sync page; idempotent under redelivery.

        Items are written first, then the page is marked received in the sync's record
        (compare-and-set); when a full sync has all its pages, what it did not list is removed
        before the record says done, so a crash in between repeats the removal, never skips it."""
        lib = page.library_id
        await bounded(
            self._put(
                catalog_item_key(user_id, lib, item.key),
                CatalogEntry(sync_id=page.sync_id, item=item).model_dump(mode="json", exclude_defaults=True),
            )
            for item in page.items
        )
        if page.collections is not None:
            tree = [c.model_dump(mode="json", exclude_defaults=True) for c in page.collections]
            await self._put(f"t.{user_id}.{lib}", {"collections": tree})
        deleted, orphaned = await self._delete_items(user_id, lib, page.deleted) if page.deleted else ([], [])
        record = await self._note_page(user_id, page)
        if record["complete"] and not record["done"]:
            if record["full"]:
                stale = [
                    key
                    for (_, key), entry in (await self._items(user_id, lib)).items()
                    if entry["sync_id"] != page.sync_id
                ]
                gone, objects = await self._delete_items(user_id, lib, stale)
                deleted, orphaned = deleted + gone, orphaned + objects
            await self._mark_sync_done(user_id, page)
        have = await bounded(self._get_json(f"f.{user_id}.{lib}.{item.key}") for item in page.items)
        needs_upload = [
            item.key
            for item, file in zip(page.items, have, strict=True)
            if item.item_type == "attachment" and item.sha256 and (file is None or file["sha256"] != item.sha256)
        ]
        await self._put(catalog_synced_key(user_id), {"last_sync_at": time.time()})
        return SyncOutcome(
            stored=len(page.items),
            deleted=len(deleted),
            needs_upload=needs_upload,
            complete=record["complete"],
            orphaned_objects=orphaned,
        )

    async def _note_page(self, user_id: str, page: LibrarySyncRequested) -> dict:
        key = f"s.{user_id}.{page.library_id}.{page.sync_id}"
        while True:
            entry = await self._get(key)
            record = (
                json.loads(entry.value)
                if entry is not None
                else {"pages": [], "final_page": None, "full": False, "done": False}
            )
            pages = set(record["pages"]) | {page.page}
            final_page = page.page if page.final else record["final_page"]
            record.update(
                pages=sorted(pages),
                final_page=final_page,
                full=bool(page.full or record["full"]),
                complete=final_page is not None and pages >= set(range(final_page + 1)),
                updated_at=time.time(),
            )
            try:
                await self._cas(key, record, entry.revision if entry is not None else 0)
                return record
            except nats.js.errors.KeyWrongLastSequenceError:
                continue  # another replica applied a page of this sync meanwhile: read it again

    async def _mark_sync_done(self, user_id: str, page: LibrarySyncRequested) -> None:
        key = f"s.{user_id}.{page.library_id}.{page.sync_id}"
        while True:
            entry = await self._get(key)
            record = json.loads(entry.value)
            if record["done"]:
                break
            try:
                await self._cas(key, {**record, "done": True}, entry.revision)
                break
            except nats.js.errors.KeyWrongLastSequenceError:
                continue
        # Drop the user's old sync records now and then (a sync takes minutes, not days).
        old = [
            e.key
            for e in await latest_entries(self.kv, f"s.{user_id}.>")
            if json.loads(e.value).get("updated_at", 0) < time.time() - SYNC_RECORD_DAYS * 86400
        ]
        await bounded(self._delete(k) for k in old)

    async def _delete_items(self, user_id: str, lib: str, keys: list[str]) -> tuple[list[str], list[str]]:
        """Delete items, their children (Zotero deletes a parent's attachments and notes with it)
        and their file records; returns (deleted keys, object names now unreferenced)."""
        if not keys:
            return [], []
        items, files = await asyncio.gather(self._items(user_id, lib), self._files(user_id, lib))
        wanted = set(keys)
        children = [key for (_, key), entry in items.items() if entry["item"].get("parent_key") in wanted]
        targets = list(dict.fromkeys([*keys, *children]))
        deleted = [k for k in targets if (lib, k) in items]
        objects = [files[(lib, k)]["object_name"] for k in targets if (lib, k) in files]
        failures = {tuple(e.key.split(".")[2:]) for e in await latest_entries(self.kv, f"x.{user_id}.{lib}.*")}
        await bounded(
            [
                *(self._delete(f"f.{user_id}.{lib}.{k}") for k in targets if (lib, k) in files),
                *(self._delete(f"x.{user_id}.{lib}.{k}") for k in targets if (lib, k) in failures),
                *(self._delete(catalog_item_key(user_id, lib, k)) for k in deleted),
            ]
        )
        return deleted, objects

    # --- uploads ----------------------------------------------------------------------------

    async def record_upload(
        self, user_id: str, library_id: str, key: str, sha256: str, object_name: str, content_type: str, size: int
    ) -> UploadOutcome:
        """Record an uploaded file of a synced attachment; unknown keys are refused."""
        item = await self._get_json(catalog_item_key(user_id, library_id, key))
        item_type = item["item"]["item_type"] if item else None
        if item_type != "attachment":
            what = "no item" if item is None else f"a {item_type}, not an attachment"
            return UploadOutcome(
                False,
                reason=(
                    f"{key} is {what} in your synced library {library_id!r}; sync its metadata "
                    "(POST /library/sync) before uploading its file"
                ),
            )
        file_key = f"f.{user_id}.{library_id}.{key}"
        have = await self._get_json(file_key)
        if have is not None and have["sha256"] == sha256:
            return UploadOutcome(True, unchanged=True)
        await self._put(
            file_key,
            {
                "sha256": sha256,
                "object_name": object_name,
                "content_type": content_type,
                "size": size,
                "uploaded_at": time.time(),
            },
        )
        if await self._get(catalog_item_key(user_id, library_id, key)) is None:
            # A sync deleted the item while we wrote: its file record must not outlive it.
            await self._delete(file_key)
            return UploadOutcome(
                False,
                reason=f"{key} was deleted from your synced library {library_id!r} during the upload",
                orphaned_object=object_name,
            )
        replaced = have["object_name"] if have is not None and have["object_name"] != object_name else None
        return UploadOutcome(True, replaced_object=replaced)

    # --- reading ----------------------------------------------------------------------------

    async def has_library(self, user_id: str) -> bool:
        """Whether the user ever synced a library here (one KV read; it may be empty by now)."""
        return await self._get(catalog_synced_key(user_id)) is not None

    async def synced_revision(self, user_id: str) -> int:
        """Changes whenever a sync page of the user is applied; 0 when the user never synced."""
        entry = await self._get(catalog_synced_key(user_id))
        return entry.revision if entry is not None else 0

    async def synced_items(self, user_id: str) -> dict[tuple[str, str], SyncedItem]:
        """Every synced item of the user (regular items, attachments and notes) by (library, key)."""
        return {k: SyncedItem.model_validate(v["item"]) for k, v in (await self._items(user_id)).items()}

    async def collection_trees(self, user_id: str) -> dict[str, list[SyncedCollection]]:
        """Library id -> the collection tree it last synced."""
        return {
            lib: [SyncedCollection.model_validate(c) for c in value["collections"]]
            for (lib,), value in (await self._json_entries(f"t.{user_id}.*")).items()
        }

    async def sources(self, user_id: str) -> tuple[list[Source], int, int]:
        """The user's indexable sources (uploaded attachments, notes and abstracts, each
        resolved to its parent item), the number of libraries and of regular items."""
        stored, files = await asyncio.gather(self._items(user_id), self._files(user_id))
        items = {k: SyncedItem.model_validate(v["item"]) for k, v in stored.items()}
        sources: list[Source] = []
        for (lib, key), item in items.items():
            parent = items.get((lib, item.parent_key)) if item.parent_key else None
            meta = synced_item_meta(parent or item, lib)
            file = files.get((lib, key))
            if item.item_type == "attachment" and file is not None:
                sources.append(
                    Source(
                        key=key,
                        library_id=lib,
                        kind="attachment",
                        item=meta,
                        content_type=file["content_type"],
                        sha256=file["sha256"],
                        object_name=file["object_name"],
                    )
                )
            elif item.item_type == "note" and (item.note or "").strip():
                sources.append(
                    Source(
                        key=key, library_id=lib, kind="note", item=meta, content_type="text/html", note_html=item.note
                    )
                )
            elif item.item_type not in ("attachment", "note") and (abstract := abstract_source(meta, item.abstract)):
                sources.append(abstract)
        regular = sum(1 for i in items.values() if i.item_type not in ("attachment", "note", "annotation"))
        return sources, len({lib for lib, _ in items}), regular

    async def counts(self, user_id: str) -> CatalogCounts:
        """What GET /library/status counts. Listing a 5,000-item library takes most of a second,
        so the counts are remembered per catalog version (every change raises it) and the
        last sync time is read fresh: a replica's memo, never the truth."""
        version, synced = await asyncio.gather(self.version(user_id), self._get_json(catalog_synced_key(user_id)))
        last_sync_at = synced["last_sync_at"] if synced else None
        memo = self._counts.get(user_id)
        if memo is not None and memo[0] == version and version:
            return replace(memo[1], last_sync_at=last_sync_at)
        stored, files = await asyncio.gather(self._items(user_id), self._files(user_id))
        attachments = [(k, v["item"]) for k, v in stored.items() if v["item"]["item_type"] == "attachment"]
        counts = CatalogCounts(
            items=sum(1 for v in stored.values() if v["item"]["item_type"] not in ("attachment", "note", "annotation")),
            attachments=len(attachments),
            uploaded=sum(1 for k, _ in attachments if k in files),
            awaiting_upload=sum(
                1 for k, i in attachments if i.get("sha256") and i["sha256"] != files.get(k, {}).get("sha256")
            ),
            last_sync_at=last_sync_at,
        )
        self._counts[user_id] = (version, counts)
        return counts

    # --- failures (so the same bytes are not converted again on every run) ------------------

    async def failures(self, user_id: str) -> list[Failure]:
        return [Failure(**f) for f in (await self._json_entries(f"x.{user_id}.>")).values()]

    async def set_failures(self, user_id: str, failures: list[Failure]) -> None:
        now = {(f.library_id, f.source_key): asdict(f) for f in failures}
        before = await self._json_entries(f"x.{user_id}.>")
        await bounded(
            [
                *(self._delete(f"x.{user_id}.{lib}.{key}") for lib, key in before if (lib, key) not in now),
                *(
                    self._put(f"x.{user_id}.{lib}.{key}", f)
                    for (lib, key), f in now.items()
                    if before.get((lib, key)) != f
                ),
            ]
        )

    # --- indexing: the catalog's version and who runs the user's indexing -------------------

    async def touch(self, user_id: str) -> int:
        """Say the user's catalog changed (or a rescan was asked for); returns the new version."""
        return await self._put(f"v.{user_id}", {"changed_at": time.time()})

    async def version(self, user_id: str) -> int:
        entry = await self._get(f"v.{user_id}")
        return entry.revision if entry is not None else 0

    async def index_run(self, user_id: str) -> tuple[IndexRun, int]:
        """The user's `r.<user>` record and its revision (0: never indexed)."""
        entry = await self._get(f"r.{user_id}")
        if entry is None:
            return IndexRun(), 0
        return IndexRun(**json.loads(entry.value)), entry.revision

    async def pending(self, index_version: str) -> list[tuple[str, IndexRun, int]]:
        """Every user whose catalog changed since their last finished run, or whose library was
        last indexed at another `index_version`: (user, run, version)."""
        versions = {e.key.split(".", 1)[1]: e.revision for e in await latest_entries(self.kv, "v.*")}
        runs = {e.key.split(".", 1)[1]: IndexRun(**json.loads(e.value)) for e in await latest_entries(self.kv, "r.*")}
        return [
            (user, run, version)
            for user, version in versions.items()
            if not (run := runs.get(user, IndexRun())).indexed(version, index_version)
        ]

    async def claim(self, user_id: str, owner: str, lease_s: float) -> Lease | None:
        """Take the lease on indexing the user's library, unless another replica holds it."""
        run, revision = await self.index_run(user_id)
        if run.owner not in (None, owner) and run.held(time.time(), lease_s):
            return None
        run = replace(run, owner=owner, heartbeat_at=time.time())
        try:
            revision = await self._cas(f"r.{user_id}", asdict(run), revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            return None  # another replica claimed it first
        return Lease(user_id, owner, revision, run)

    async def beat(
        self,
        lease: Lease,
        progress: dict | None = None,
        *,
        release: bool = False,
        indexed_through: tuple[int, str] | None = None,
    ) -> bool:
        """Renew the lease (with the run's progress), or give it back; False once it was lost.
        `indexed_through`: the catalog version and index version a finished run indexed."""
        if lease.lost:
            return False
        run = replace(
            lease.run, heartbeat_at=time.time(), progress=progress if progress is not None else lease.run.progress
        )
        if indexed_through is not None:
            run.indexed_through, run.index_version = indexed_through
        if release:
            run.owner = None
        try:
            lease.revision = await retrying(
                lambda: self._cas(f"r.{lease.user_id}", asdict(run), lease.revision), what="renew the indexing lease"
            )
        except nats.js.errors.KeyWrongLastSequenceError:
            current, revision = await self.index_run(lease.user_id)
            if current != run:  # not our own write landing before a retry: someone took over
                lease.lost = True
                return False
            lease.revision = revision
        lease.run = run
        return True

    # --- the items cited in the user's recent answers (what indexing converts early) --------

    async def recently_cited(self, user_id: str) -> list[ItemRef]:
        """The items cited in the user's recent answers, the most recent first (`c.<user>`)."""
        entry = await self._get(f"c.{user_id}")
        return [ref for ref, _ in _cited_items(entry)]

    async def note_cited(
        self, user_id: str, refs: Iterable[ItemRef], at: float, limit: int = MAX_CITED
    ) -> list[ItemRef]:
        """Note the items an answer that finished at `at` cited (in its order) among the user's
        recently cited items (`merge_cited`), keeping at most `limit`; returns them as written."""
        refs = list(refs)
        key = f"c.{user_id}"
        while True:
            entry = await self._get(key)
            known = _cited_items(entry)
            items = merge_cited(known, refs, at, limit)
            if items != known:
                record = {"items": [[lib, item_key, when] for (lib, item_key), when in items]}
                try:
                    await retrying(
                        lambda: self._cas(key, record, entry.revision if entry is not None else 0),
                        what=f"write {key}",
                    )
                except nats.js.errors.KeyWrongLastSequenceError:
                    continue  # another replica noted an answer of this user meanwhile: read it again
            return [ref for ref, _ in items]


def _cited_items(entry) -> list[Cited]:
    """The `c.<user>` record's items: `[library, key, when]` each, the most recent first."""
    if entry is None or not entry.value:
        return []
    return [((lib, key), when) for lib, key, when in json.loads(entry.value)["items"]]
