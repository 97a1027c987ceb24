"""The `zocrates_library` object store, as retrieval uses it: the files the gateway uploaded
for hosted libraries (claim-checks), read back and checked, or deleted once unreferenced."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from nats.js.errors import NotFoundError


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

    async def download_checked(self, object_name: str, target: Path, sha256: str) -> Path:
        """`download`, then check the file is the one recorded for the upload (its SHA-256)."""
        await self.download(object_name, target)
        digest = await asyncio.to_thread(sha256_of, target)
        if digest != sha256:
            raise ValueError(
                f"object {object_name} holds SHA-256 {digest[:12]}..., the upload recorded {sha256[:12]}..."
            )
        return target

    async def delete(self, object_name: str) -> None:
        obj = await self._store()
        try:
            await obj.delete(object_name)
        except NotFoundError:
            pass


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
