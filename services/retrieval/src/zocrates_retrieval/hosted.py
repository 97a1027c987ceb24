"""The lab-hosted library: synced Zotero metadata per user, and the uploaded files' records.

In the hosted deployment there is no `zotero.sqlite` beside the service: the researcher's
plugin sends the library's metadata in pages (`LibrarySyncRequested`) and uploads each
attachment file through the gateway into the `zocrates_library` object store
(`AttachmentUploaded` is the claim-check). This module keeps what arrived, durably, in one
SQLite database under the retrieval data dir, and turns it into the same `Source`s the Zotero
reader produces, so one ingest path indexes both.

Every query names the user: one user's catalog is invisible to another's. Applying a page
is one transaction and idempotent, so a redelivered message changes nothing more.

`LibraryFiles` is the object-store adapter (nats-py); the catalog itself knows nothing of NATS.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from zocrates_contracts import LibrarySyncRequested, SyncedItem
from zocrates_retrieval.ingest import Failure
from zocrates_retrieval.zotero import ItemMeta, Source

_YEAR_RE = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")
_DOI_RE = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)", re.IGNORECASE)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    user_id TEXT NOT NULL, library_id TEXT NOT NULL, key TEXT NOT NULL,
    item_type TEXT NOT NULL, parent_key TEXT, sync_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (user_id, library_id, key));
CREATE INDEX IF NOT EXISTS items_parent ON items (user_id, library_id, parent_key);
CREATE TABLE IF NOT EXISTS files (
    user_id TEXT NOT NULL, library_id TEXT NOT NULL, key TEXT NOT NULL,
    sha256 TEXT NOT NULL, object_name TEXT NOT NULL, content_type TEXT NOT NULL,
    size INTEGER NOT NULL, uploaded_at REAL NOT NULL,
    PRIMARY KEY (user_id, library_id, key));
CREATE TABLE IF NOT EXISTS syncs (
    user_id TEXT NOT NULL, library_id TEXT NOT NULL, sync_id TEXT NOT NULL,
    pages TEXT NOT NULL, final_page INTEGER, full INTEGER NOT NULL, done INTEGER NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (user_id, library_id, sync_id));
CREATE TABLE IF NOT EXISTS failures (
    user_id TEXT NOT NULL, library_id TEXT NOT NULL, source_key TEXT NOT NULL,
    item_key TEXT NOT NULL, title TEXT NOT NULL, reason TEXT NOT NULL, detail TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    PRIMARY KEY (user_id, library_id, source_key));
"""


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


@dataclass(frozen=True)
class CatalogCounts:
    items: int = 0
    attachments: int = 0
    uploaded: int = 0
    awaiting_upload: int = 0
    last_sync_at: float | None = None


def item_meta(item: SyncedItem, library_id: str) -> ItemMeta:
    """The index's bibliographic metadata of a synced item (DOI also found in Extra or the URL,
    as the Zotero reader does)."""
    year = item.year
    if year is None and item.date and (m := _YEAR_RE.search(item.date)):
        year = int(m.group(1))
    doi = item.doi or None
    if not doi:
        for text in (item.extra or "", item.url or ""):
            if m := _DOI_RE.search(text):
                doi = m.group(1).rstrip(".,;")
                break
    return ItemMeta(key=item.key, library_id=library_id, item_type=item.item_type, title=item.title.strip(),
                    creators=tuple(item.creators), year=year,
                    publication=item.publication or None, doi=doi, url=item.url or None)


class Catalog:
    """Synced metadata and uploaded-file records of every hosted user, in `path` (SQLite, WAL)."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self._con = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=FULL")  # a message is acked after this commits
        self._con.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._con.close()

    def _tx(self):
        return _Transaction(self._con, self._lock)

    # --- sync -------------------------------------------------------------------------------

    def apply_sync(self, user_id: str, page: LibrarySyncRequested) -> SyncOutcome:
        """Store one sync page in one transaction; idempotent under redelivery."""
        lib, now = page.library_id, time.time()
        with self._tx() as con:
            for item in page.items:
                con.execute(
                    "INSERT INTO items VALUES (?,?,?,?,?,?,?) ON CONFLICT (user_id, library_id, key) DO UPDATE "
                    "SET item_type=excluded.item_type, parent_key=excluded.parent_key, "
                    "sync_id=excluded.sync_id, data=excluded.data",
                    (user_id, lib, item.key, item.item_type, item.parent_key, page.sync_id,
                     item.model_dump_json(exclude_defaults=True)))
            removed = self._delete_items(con, user_id, lib, page.deleted)
            row = con.execute("SELECT pages, final_page, full, done FROM syncs WHERE user_id=? AND library_id=? "
                              "AND sync_id=?", (user_id, lib, page.sync_id)).fetchone()
            pages = set(json.loads(row[0])) if row else set()
            pages.add(page.page)
            final_page = page.page if page.final else (row[1] if row else None)
            full = bool(page.full or (row and row[2]))
            complete = final_page is not None and pages >= set(range(final_page + 1))
            if complete and full and not (row and row[3]):
                stale = [r[0] for r in con.execute(
                    "SELECT key FROM items WHERE user_id=? AND library_id=? AND sync_id<>?",
                    (user_id, lib, page.sync_id))]
                removed = _merge(removed, self._delete_items(con, user_id, lib, stale))
            con.execute("INSERT OR REPLACE INTO syncs VALUES (?,?,?,?,?,?,?,?)",
                        (user_id, lib, page.sync_id, json.dumps(sorted(pages)), final_page, int(full),
                         int(complete), now))
            con.execute("DELETE FROM syncs WHERE user_id=? AND updated_at<?", (user_id, now - 7 * 86400))
            needs_upload = []
            for item in page.items:
                if item.item_type == "attachment" and item.sha256:
                    have = con.execute("SELECT sha256 FROM files WHERE user_id=? AND library_id=? AND key=?",
                                       (user_id, lib, item.key)).fetchone()
                    if have is None or have[0] != item.sha256:
                        needs_upload.append(item.key)
        return SyncOutcome(stored=len(page.items), deleted=len(removed[0]), needs_upload=needs_upload,
                           complete=complete, orphaned_objects=removed[1])

    @staticmethod
    def _delete_items(con, user_id: str, lib: str, keys: list[str]) -> tuple[list[str], list[str]]:
        """Delete items, their children (Zotero deletes a parent's attachments and notes with it)
        and their file records; returns (deleted keys, object names now unreferenced)."""
        keys = list(dict.fromkeys(keys))
        children = []
        for key in keys:
            children += [r[0] for r in con.execute(
                "SELECT key FROM items WHERE user_id=? AND library_id=? AND parent_key=?", (user_id, lib, key))]
        deleted, objects = [], []
        for key in dict.fromkeys(keys + children):
            objects += [r[0] for r in con.execute(
                "SELECT object_name FROM files WHERE user_id=? AND library_id=? AND key=?", (user_id, lib, key))]
            con.execute("DELETE FROM files WHERE user_id=? AND library_id=? AND key=?", (user_id, lib, key))
            cur = con.execute("DELETE FROM items WHERE user_id=? AND library_id=? AND key=?", (user_id, lib, key))
            con.execute("DELETE FROM failures WHERE user_id=? AND library_id=? AND source_key=?",
                        (user_id, lib, key))
            if cur.rowcount:
                deleted.append(key)
        return deleted, objects

    # --- uploads ----------------------------------------------------------------------------

    def record_upload(self, user_id: str, library_id: str, key: str, sha256: str, object_name: str,
                      content_type: str, size: int) -> UploadOutcome:
        """Record an uploaded file of a synced attachment; unknown keys are refused."""
        with self._tx() as con:
            row = con.execute("SELECT item_type FROM items WHERE user_id=? AND library_id=? AND key=?",
                              (user_id, library_id, key)).fetchone()
            if row is None or row[0] != "attachment":
                what = "no item" if row is None else f"a {row[0]}, not an attachment"
                return UploadOutcome(False, reason=(
                    f"{key} is {what} in your synced library {library_id!r}; sync its metadata "
                    "(POST /library/sync) before uploading its file"))
            have = con.execute("SELECT sha256, object_name FROM files WHERE user_id=? AND library_id=? AND key=?",
                               (user_id, library_id, key)).fetchone()
            if have is not None and have[0] == sha256:
                return UploadOutcome(True, unchanged=True)
            con.execute("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?)",
                        (user_id, library_id, key, sha256, object_name, content_type, size, time.time()))
        replaced = have[1] if have is not None and have[1] != object_name else None
        return UploadOutcome(True, replaced_object=replaced)

    # --- reading ----------------------------------------------------------------------------

    def has_library(self, user_id: str) -> bool:
        with self._lock:
            return self._con.execute("SELECT 1 FROM items WHERE user_id=? LIMIT 1", (user_id,)).fetchone() is not None

    def users(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._con.execute("SELECT DISTINCT user_id FROM items")]

    def sources(self, user_id: str) -> tuple[list[Source], int, int]:
        """The user's indexable sources (uploaded attachments and notes, each resolved to its
        parent item), the number of libraries and of regular items."""
        with self._lock:
            rows = self._con.execute("SELECT library_id, key, data FROM items WHERE user_id=?", (user_id,)).fetchall()
            files = {(r[0], r[1]): r[2:] for r in self._con.execute(
                "SELECT library_id, key, sha256, object_name, content_type FROM files WHERE user_id=?", (user_id,))}
        items = {(lib, key): SyncedItem.model_validate_json(data) for lib, key, data in rows}
        sources: list[Source] = []
        for (lib, key), item in items.items():
            parent = items.get((lib, item.parent_key)) if item.parent_key else None
            meta = item_meta(parent or item, lib)
            if item.item_type == "attachment" and (lib, key) in files:
                sha, object_name, content_type = files[(lib, key)]
                sources.append(Source(key=key, library_id=lib, kind="attachment", item=meta,
                                      content_type=content_type, sha256=sha, object_name=object_name))
            elif item.item_type == "note" and (item.note or "").strip():
                sources.append(Source(key=key, library_id=lib, kind="note", item=meta, content_type="text/html",
                                      note_html=item.note))
        regular = sum(1 for i in items.values() if i.item_type not in ("attachment", "note", "annotation"))
        return sources, len({lib for lib, _ in items}), regular

    def counts(self, user_id: str) -> CatalogCounts:
        with self._lock:
            con = self._con
            items = con.execute("SELECT COUNT(*) FROM items WHERE user_id=? AND item_type NOT IN "
                                "('attachment','note','annotation')", (user_id,)).fetchone()[0]
            attachments = con.execute("SELECT COUNT(*) FROM items WHERE user_id=? AND item_type='attachment'",
                                      (user_id,)).fetchone()[0]
            uploaded = con.execute("SELECT COUNT(*) FROM files WHERE user_id=?", (user_id,)).fetchone()[0]
            awaiting = 0
            for data, sha in con.execute(
                    "SELECT i.data, f.sha256 FROM items i LEFT JOIN files f ON f.user_id=i.user_id AND "
                    "f.library_id=i.library_id AND f.key=i.key WHERE i.user_id=? AND i.item_type='attachment'",
                    (user_id,)):
                wanted = json.loads(data).get("sha256")
                awaiting += bool(wanted and wanted != sha)
            last = con.execute("SELECT MAX(updated_at) FROM syncs WHERE user_id=?", (user_id,)).fetchone()[0]
        return CatalogCounts(items, attachments, uploaded, awaiting, last)

    # --- failures (so the same bytes are not converted again on every run) ------------------

    def failures(self, user_id: str) -> list[Failure]:
        with self._lock:
            return [Failure(*r) for r in self._con.execute(
                "SELECT library_id, source_key, item_key, title, reason, detail, content_hash FROM failures "
                "WHERE user_id=?", (user_id,))]

    def set_failures(self, user_id: str, failures: list[Failure]) -> None:
        with self._tx() as con:
            con.execute("DELETE FROM failures WHERE user_id=?", (user_id,))
            con.executemany("INSERT OR REPLACE INTO failures VALUES (?,?,?,?,?,?,?,?)", [
                (user_id, f.library_id, f.source_key, f.item_key, f.title, f.reason, f.detail, f.content_hash)
                for f in failures])


def _merge(a: tuple[list[str], list[str]], b: tuple[list[str], list[str]]) -> tuple[list[str], list[str]]:
    return a[0] + b[0], a[1] + b[1]


class _Transaction:
    """`BEGIN IMMEDIATE` ... `COMMIT` (or `ROLLBACK` on an exception) under the catalog's lock."""

    def __init__(self, con: sqlite3.Connection, lock: threading.Lock):
        self.con, self.lock = con, lock

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        self.con.execute("BEGIN IMMEDIATE")
        return self.con

    def __exit__(self, exc_type, *_) -> None:
        try:
            self.con.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.lock.release()


class LibraryFiles:
    """The `zocrates_library` object store, as retrieval uses it: read a file, delete one."""

    def __init__(self, js, bucket: str):
        self._js = js
        self._bucket = bucket
        self._obj = None

    async def _store(self):
        if self._obj is None:
            self._obj = await self._js.object_store(self._bucket)
        return self._obj

    async def download(self, object_name: str, target: Path) -> Path:
        """Copy an object into `target`; nats-py checks its SHA-256 digest on the way."""
        obj = await self._store()
        with open(target, "wb") as out:
            await obj.get(object_name, writeinto=out)
        return target

    async def delete(self, object_name: str) -> None:
        from nats.js.errors import NotFoundError

        obj = await self._store()
        try:
            await obj.delete(object_name)
        except NotFoundError:
            pass
