"""The JetStream stores every service shares, created on first use: one owner for their configuration.

The streams are configured in `bus.STREAM_CONFIGS`; the key-value buckets and object stores are
configured here. Every replica of every service may race to create the same bucket on its
first start: creating an existing bucket with the same configuration succeeds, and a replica
that loses the race with another configuration (another replica count) opens the existing one.
"""

from __future__ import annotations

from typing import Any

import nats.js.errors
from nats.js import JetStreamContext, api
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from zocrates_contracts.subjects import (
    LIBRARY_BUCKET,
    LIBRARY_CATALOG_BUCKET,
    SESSIONS_BUCKET,
    TOKENS_BUCKET,
)

#: Key-value buckets: only a key's latest value matters (sessions, tokens, the hosted library catalog).
KEY_VALUE_BUCKETS: dict[str, dict[str, Any]] = {
    SESSIONS_BUCKET: {"history": 1},
    TOKENS_BUCKET: {"history": 1},
    LIBRARY_CATALOG_BUCKET: {"history": 1},
}

#: Object stores kept until deleted. (Staged PDFs expire: `staged_store` configures its own bucket.)
OBJECT_STORES: dict[str, dict[str, Any]] = {
    LIBRARY_BUCKET: {"description": "Zocrates lab-hosted library files"},
}


async def key_value(js: JetStreamContext, bucket: str, replicas: int = 1) -> KeyValue:
    """The key-value bucket `bucket` (one of KEY_VALUE_BUCKETS), created on first use."""
    try:
        return await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        pass
    try:
        return await js.create_key_value(bucket=bucket, replicas=replicas, **KEY_VALUE_BUCKETS[bucket])
    except nats.js.errors.BadRequestError:  # another replica created it first, differently
        return await js.key_value(bucket)


async def object_store(
    js: JetStreamContext, bucket: str, replicas: int = 1, config: api.ObjectStoreConfig | None = None
) -> ObjectStore:
    """The object store `bucket`, created on first use with `config` (by default its entry in
    OBJECT_STORES)."""
    try:
        return await js.object_store(bucket)
    except nats.js.errors.BucketNotFoundError:
        pass
    config = config or api.ObjectStoreConfig(replicas=replicas, **OBJECT_STORES[bucket])
    try:
        return await js.create_object_store(bucket, config)
    except nats.js.errors.BadRequestError:  # another replica created it first
        return await js.object_store(bucket)
