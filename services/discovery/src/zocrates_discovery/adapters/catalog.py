"""The hosted library catalog, read: what a hosted user owns, from the KV bucket retrieval keeps.

Retrieval writes the catalog (`CatalogEntry` under `i.<user>.<library>.<key>`, and the user's
sync record under `l.<user>`, whose revision changes whenever a sync page is applied); every
discovery replica reads the same entries, so none keeps a library of its own.
"""

from __future__ import annotations

import nats.js.errors
from nats.js import JetStreamContext
from nats.js.kv import KeyValue

from zocrates_contracts import CatalogEntry, SyncedItem
from zocrates_contracts.subjects import LIBRARY_CATALOG_BUCKET, catalog_items_pattern, catalog_synced_key
from zocrates_runtime import stores
from zocrates_runtime.kv import latest_entries

_NOT_OWNED = ("attachment", "note", "annotation")


class Catalog:
    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    @classmethod
    async def open(cls, js: JetStreamContext, replicas: int = 1) -> Catalog:
        """The catalog bucket (created here if retrieval has not yet)."""
        return cls(await stores.key_value(js, LIBRARY_CATALOG_BUCKET, replicas))

    async def revision(self, user_id: str) -> int | None:
        """The revision of the user's sync record; None when the user never synced."""
        try:
            return (await self.kv.get(catalog_synced_key(user_id))).revision
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            return None

    async def owned_items(self, user_id: str) -> list[SyncedItem]:
        """The user's synced regular items (not attachments, notes or annotations)."""
        entries = await latest_entries(self.kv, catalog_items_pattern(user_id))  # filtered by the server
        items = [CatalogEntry.model_validate_json(entry.value).item for entry in entries]
        return [item for item in items if item.item_type not in _NOT_OWNED]
