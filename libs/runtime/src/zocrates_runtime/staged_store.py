"""Where staged PDFs live until the plugin fetches them: owned by one user, expiring, verified.

Two adapters behind one protocol:
- `NatsStagedStore`: a NATS JetStream Object Store bucket (`zocrates_staged`). The bucket's
  TTL removes files on the server; nats-py records a SHA-256 digest on write, and every read
  here verifies it.
  The gateway builds one from its own connection to serve `GET /staging/{id}`, so this module
  depends on nats-py and the contracts only.
- `FileStagedStore`: a directory, for tests and single-machine use; every write is a temp
  file, fsync, rename, so a crash never leaves a partial file visible.

Tenancy: the owner is recorded with each object and checked on every read. A staged id that
is absent, expired, malformed or owned by someone else all read as None, so the gateway
answers 404 alike and an id reveals nothing about other users' files.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import json
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import BinaryIO, Protocol

from nats.js import JetStreamContext, api
from nats.js.errors import (
    NotFoundError,
    ObjectNotFoundError,
)
from nats.js.object_store import ObjectStore

from zocrates_contracts.base import is_valid_id
from zocrates_runtime.durable import fsync_dir
from zocrates_runtime.stores import object_store

DEFAULT_BUCKET = "zocrates_staged"
DEFAULT_TTL = timedelta(hours=24)

# Object headers (a NATS header map: each value a list, as the Go client writes them).
OWNER = "Zocrates-Owner"
SHA256 = "Zocrates-Sha256"
CREATED = "Zocrates-Created"
EXPIRES = "Zocrates-Expires"
META = "Zocrates-Meta"

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class StagedInfo:
    """What is known about one staged file, without its bytes."""

    staged_id: str
    user_id: str
    size: int
    sha256: str  # hex
    created_at: datetime
    expires_at: datetime
    meta: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StagedObject:
    info: StagedInfo
    data: bytes


class StagedIntegrityError(Exception):
    """A staged file's bytes no longer match the digest recorded when it was stored."""


class StagedStore(Protocol):
    """Staged files, each owned by the user who staged it."""

    async def put(self, user_id: str, staged_id: str, path: Path, meta: Mapping[str, str]) -> StagedInfo:
        """Store the file at `path` (left in place) as `staged_id`, owned by `user_id`."""

    async def info(self, user_id: str, staged_id: str) -> StagedInfo | None:
        """The file's description, or None when absent, expired or another user's."""

    async def get(self, user_id: str, staged_id: str) -> StagedObject | None:
        """The file and its bytes (digest verified), or None as for `info`."""

    async def read_into(self, user_id: str, staged_id: str, out: BinaryIO) -> StagedInfo | None:
        """Write the file's bytes (digest verified) into `out`; None as for `info`."""

    async def delete(self, user_id: str, staged_id: str) -> bool:
        """Remove the user's file; False when there was none to remove."""

    async def expire(self, now: datetime | None = None) -> int:
        """Remove every file past its expiry; how many were removed."""


def _ids_ok(user_id: str, staged_id: str) -> bool:
    # Ids become object names and path components: the contract's alphabet keeps both safe.
    return is_valid_id(user_id) and is_valid_id(staged_id)


def _require_ids(user_id: str, staged_id: str) -> None:
    if not _ids_ok(user_id, staged_id):
        raise ValueError(
            f"invalid user or staged id ({user_id!r}, {staged_id!r}): expected 1-64 characters of A-Z a-z 0-9 _ -"
        )


# --- NATS JetStream Object Store -------------------------------------------------------------


class NatsStagedStore:
    """Staged files in a JetStream Object Store bucket, created on first use.

    `ttl` is the writer's setting (the staging service passes its `expire_after`): the bucket
    is created with it, or its max age is updated to it. A reader such as the gateway passes
    none and uses the bucket as it is (creating it with the default if it does not exist yet).
    """

    def __init__(
        self,
        js: JetStreamContext,
        *,
        bucket: str = DEFAULT_BUCKET,
        ttl: timedelta | None = None,
        read_timeout: float = 120.0,
        clock: Clock = utcnow,
        replicas: int = 1,
    ) -> None:
        self._js = js
        self._replicas = replicas
        self._bucket = bucket
        self._ttl = ttl
        self._read_timeout = read_timeout
        self._clock = clock
        self._obj: ObjectStore | None = None
        self._max_age = ttl or DEFAULT_TTL
        self._lock = asyncio.Lock()

    async def _store(self) -> ObjectStore:
        if self._obj is None:
            async with self._lock:
                if self._obj is None:
                    self._obj = await self._ensure_bucket()
        return self._obj

    async def _ensure_bucket(self) -> ObjectStore:
        stream = f"OBJ_{self._bucket}"
        obj = await object_store(
            self._js,
            self._bucket,
            config=api.ObjectStoreConfig(
                description="Zocrates staged PDFs awaiting import",
                ttl=self._max_age.total_seconds(),
                replicas=self._replicas,
            ),
        )
        config = (await self._js.stream_info(stream)).config
        if self._ttl is not None and abs((config.max_age or 0) - self._ttl.total_seconds()) > 1e-3:
            config.max_age = self._ttl.total_seconds()
            await self._js.update_stream(config)
        elif config.max_age:
            self._max_age = timedelta(seconds=config.max_age)
        return obj

    async def put(self, user_id: str, staged_id: str, path: Path, meta: Mapping[str, str]) -> StagedInfo:
        _require_ids(user_id, staged_id)
        obj = await self._store()
        with contextlib.suppress(ObjectNotFoundError):
            existing = _decode(await obj.get_info(staged_id))
            if existing is None or existing.user_id != user_id:
                raise PermissionError(f"staged id {staged_id} is taken by another owner")
        now = self._clock()
        headers = {
            OWNER: [user_id],
            CREATED: [now.isoformat()],
            EXPIRES: [(now + self._max_age).isoformat()],
            META: [json.dumps(dict(meta), separators=(",", ":"))],
        }
        with open(path, "rb") as data:
            raw = await obj.put(
                staged_id, data, meta=api.ObjectMeta(name=staged_id, description="staged PDF", headers=headers)
            )
        info = _decode(raw)
        assert info is not None
        return info

    async def info(self, user_id: str, staged_id: str) -> StagedInfo | None:
        found = await self._find(user_id, staged_id)
        return None if found is None else found[1]

    async def get(self, user_id: str, staged_id: str) -> StagedObject | None:
        buffer = io.BytesIO()
        info = await self.read_into(user_id, staged_id, buffer)
        return None if info is None else StagedObject(info, buffer.getvalue())

    async def read_into(self, user_id: str, staged_id: str, out: BinaryIO) -> StagedInfo | None:
        found = await self._find(user_id, staged_id)  # the owner is checked before any byte moves
        if found is None:
            return None
        raw, info = found
        async with asyncio.timeout(self._read_timeout):
            await self._read_chunks(raw, out)
        return info

    async def _find(self, user_id: str, staged_id: str) -> tuple[api.ObjectInfo, StagedInfo] | None:
        """The object's stored info and what `user_id` may see of it; None when they may not."""
        if not _ids_ok(user_id, staged_id):
            return None
        obj = await self._store()
        try:
            raw = await obj.get_info(staged_id)
        except ObjectNotFoundError:
            return None
        info = self._visible(raw, user_id)
        return None if info is None else (raw, info)

    async def _read_chunks(self, raw: api.ObjectInfo, out: BinaryIO) -> None:
        """Copy the object's chunks into `out`, verifying size and SHA-256 digest.

        Reads each chunk with a direct get (next message on the chunk subject) rather than
        nats-py's `ObjectStore.get`, whose ordered consumer took about 10 ms per 128 KB chunk
        here (3 MB in 260 ms against 14 ms this way); the digest check is the same.
        """
        stream, subject = f"OBJ_{self._bucket}", f"$O.{self._bucket}.C.{raw.nuid}"
        digest, size, seq = hashlib.sha256(), 0, 1
        for _ in range(raw.chunks or 0):
            try:
                msg = await self._js.get_msg(stream, seq=seq, subject=subject, next=True, direct=True)
            except NotFoundError:
                break
            data = msg.data or b""
            digest.update(data)
            out.write(data)
            size += len(data)
            seq = msg.seq + 1
        expected = (raw.digest or "").split("=", 1)[-1]
        actual = base64.urlsafe_b64encode(digest.digest()).decode()
        if size != (raw.size or 0) or actual.rstrip("=") != expected.rstrip("="):
            raise StagedIntegrityError(
                f"staged file {raw.name}: its bytes do not match the stored SHA-256 digest "
                f"({size} of {raw.size} bytes read)"
            )

    async def delete(self, user_id: str, staged_id: str) -> bool:
        if await self.info(user_id, staged_id) is None:
            return False
        obj = await self._store()
        with contextlib.suppress(ObjectNotFoundError):
            await obj.delete(staged_id)
            return True
        return False

    async def expire(self, now: datetime | None = None) -> int:
        """Remove files past their recorded expiry (the bucket's max age removes them too)."""
        now = now or self._clock()
        obj = await self._store()
        try:
            entries = await obj.list(ignore_deletes=True)
        except NotFoundError:
            return 0
        removed = 0
        for raw in entries:
            info = _decode(raw)
            if info is not None and info.expires_at <= now:
                with contextlib.suppress(ObjectNotFoundError):
                    await obj.delete(raw.name)
                    removed += 1
        return removed

    def _visible(self, raw: api.ObjectInfo, user_id: str) -> StagedInfo | None:
        info = _decode(raw)
        if info is None or info.user_id != user_id or info.expires_at <= self._clock():
            return None
        return info


def _header(headers: Mapping, name: str) -> str | None:
    value = headers.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    return value if isinstance(value, str) else None


def _decode(raw: api.ObjectInfo) -> StagedInfo | None:
    """Our view of an object, or None for one that is deleted, a link or not ours."""
    headers = raw.headers or {}
    owner, created, expires = (_header(headers, h) for h in (OWNER, CREATED, EXPIRES))
    if raw.deleted or raw.is_link() or not (owner and created and expires):
        return None
    digest = (raw.digest or "").split("=", 1)[-1]
    try:
        sha = base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()
        meta = json.loads(_header(headers, META) or "{}")
        return StagedInfo(
            raw.name, owner, raw.size or 0, sha, datetime.fromisoformat(created), datetime.fromisoformat(expires), meta
        )
    except ValueError:
        return None


# --- a directory -----------------------------------------------------------------------------


class FileStagedStore:
    """Staged files in `root/<user_id>/`: the bytes in `<id>-<sha>.pdf`, the record in `<id>.json`.

    The record is written last and names the data file, so a reader sees the old file or the
    new one, never a mix; data files are named by content for the same reason.
    """

    def __init__(self, root: Path, *, ttl: timedelta = DEFAULT_TTL, clock: Clock = utcnow) -> None:
        self.root = Path(root)
        self._ttl = ttl
        self._clock = clock

    async def put(self, user_id: str, staged_id: str, path: Path, meta: Mapping[str, str]) -> StagedInfo:
        _require_ids(user_id, staged_id)
        return await asyncio.to_thread(self._put, user_id, staged_id, Path(path), dict(meta))

    def _put(self, user_id: str, staged_id: str, path: Path, meta: dict) -> StagedInfo:
        folder = self.root / user_id
        folder.mkdir(parents=True, exist_ok=True)
        digest, size = hashlib.sha256(), 0
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
                while chunk := src.read(1024 * 1024):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            sha = digest.hexdigest()
            data_name = f"{staged_id}-{sha[:16]}.pdf"
            os.replace(tmp, folder / data_name)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        previous = self._read_record(user_id, staged_id)
        now = self._clock()
        info = StagedInfo(staged_id, user_id, size, sha, now, now + self._ttl, meta)
        record = {
            "staged_id": staged_id,
            "user_id": user_id,
            "size": size,
            "sha256": sha,
            "created_at": now.isoformat(),
            "expires_at": info.expires_at.isoformat(),
            "meta": meta,
            "file": data_name,
        }
        _write_atomically(folder / f"{staged_id}.json", json.dumps(record).encode())
        fsync_dir(folder)
        if previous and previous.get("file") != data_name:
            with contextlib.suppress(FileNotFoundError):
                (folder / previous["file"]).unlink()
        return info

    def _read_record(self, user_id: str, staged_id: str) -> dict | None:
        try:
            record = json.loads((self.root / user_id / f"{staged_id}.json").read_bytes())
        except (FileNotFoundError, ValueError):
            return None
        file = record.get("file", "")
        # The record names a file in the same folder, nothing else.
        if record.get("user_id") != user_id or Path(file).name != file or not file:
            return None
        return record

    def _visible(self, user_id: str, staged_id: str) -> tuple[StagedInfo, Path] | None:
        if not _ids_ok(user_id, staged_id):
            return None
        record = self._read_record(user_id, staged_id)
        if record is None:
            return None
        info = StagedInfo(
            staged_id,
            user_id,
            record["size"],
            record["sha256"],
            datetime.fromisoformat(record["created_at"]),
            datetime.fromisoformat(record["expires_at"]),
            record.get("meta", {}),
        )
        if info.expires_at <= self._clock():
            return None
        return info, self.root / user_id / record["file"]

    async def info(self, user_id: str, staged_id: str) -> StagedInfo | None:
        found = await asyncio.to_thread(self._visible, user_id, staged_id)
        return found[0] if found else None

    async def get(self, user_id: str, staged_id: str) -> StagedObject | None:
        buffer = io.BytesIO()
        info = await self.read_into(user_id, staged_id, buffer)
        return None if info is None else StagedObject(info, buffer.getvalue())

    async def read_into(self, user_id: str, staged_id: str, out: BinaryIO) -> StagedInfo | None:
        return await asyncio.to_thread(self._read_into, user_id, staged_id, out)

    def _read_into(self, user_id: str, staged_id: str, out: BinaryIO) -> StagedInfo | None:
        found = self._visible(user_id, staged_id)
        if found is None:
            return None
        info, path = found
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as src:
                while chunk := src.read(1024 * 1024):
                    digest.update(chunk)
                    out.write(chunk)
        except FileNotFoundError:
            return None  # expired and removed while we looked
        if digest.hexdigest() != info.sha256:
            raise StagedIntegrityError(f"staged file {staged_id}: its bytes do not match the stored SHA-256 digest")
        return info

    async def delete(self, user_id: str, staged_id: str) -> bool:
        if not _ids_ok(user_id, staged_id):
            return False
        return await asyncio.to_thread(self._delete, user_id, staged_id)

    def _delete(self, user_id: str, staged_id: str) -> bool:
        record = self._read_record(user_id, staged_id)
        if record is None:
            return False
        (self.root / user_id / f"{staged_id}.json").unlink(missing_ok=True)  # invisible first
        (self.root / user_id / record["file"]).unlink(missing_ok=True)
        return True

    async def expire(self, now: datetime | None = None) -> int:
        return await asyncio.to_thread(self._expire, now or self._clock())

    def _expire(self, now: datetime) -> int:
        removed = 0
        if not self.root.exists():
            return 0
        stale_before = time.time() - 3600  # leftovers of crashed writes, never a live one
        for folder in (p for p in self.root.iterdir() if p.is_dir()):
            referenced = set()
            for record_path in folder.glob("*.json"):
                record = self._read_record(folder.name, record_path.stem)
                if record is None:
                    continue
                if datetime.fromisoformat(record["expires_at"]) <= now:
                    removed += self._delete(folder.name, record_path.stem)
                else:
                    referenced.add(record["file"])
            for leftover in folder.iterdir():
                if (
                    leftover.is_file()
                    and leftover.suffix in (".pdf", ".part")
                    and leftover.name not in referenced
                    and leftover.stat().st_mtime < stale_before
                ):
                    leftover.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        return removed


def _write_atomically(target: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
