"""Reading many keys of a JetStream KV bucket at once: the latest value of every key that
matches a subject wildcard, filtered by the server.

nats-py's `KeyValue.watch` (and `keys()`, built on it) is the wrong tool for a listing:
- its "initial values done" marker races with the first delivery (it compares the
  consumer's pending count with what the client has received so far), so a listing can
  come back empty or short while the values are on their way;
- `stop()` only unsubscribes: the ordered consumer stays on the server for its inactive
  threshold (5 minutes), one per listing.
A pull consumer delivers nothing until asked, so its pending count at creation is exactly
the number of matching keys; it is fetched to the end and deleted when done.
"""

from __future__ import annotations

import nats.errors
import nats.js.errors
from nats.js import api
from nats.js.kv import KV_DEL, KV_OP, KV_PURGE, KeyValue

FETCH_BATCH = 512
#: If this process dies mid-listing, the server drops the consumer after this long.
ABANDONED_AFTER_S = 10.0


async def latest_entries(kv: KeyValue, pattern: str, *, timeout: float = 10.0) -> list[KeyValue.Entry]:
    """The current entries of `kv` whose keys match `pattern` (e.g. `s.alice.*`), deleted and
    purged keys left out, in stream order."""
    # nats-py's KeyValue keeps its JetStream context, stream and subject prefix privately;
    # these names are stable across nats-py 2.x (they follow the KV protocol, ADR-8).
    js, stream, prefix = kv._js, kv._stream, kv._pre
    consumer = await js.add_consumer(
        stream,
        api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT,
            ack_policy=api.AckPolicy.NONE,
            filter_subject=f"{prefix}{pattern}",
            inactive_threshold=ABANDONED_AFTER_S,
            mem_storage=True,
            num_replicas=1,
        ),
    )
    found: list[KeyValue.Entry] = []
    try:
        remaining = consumer.num_pending
        if remaining:
            sub = await js.pull_subscribe_bind(consumer=consumer.name, stream=stream)
            try:
                while remaining > 0:
                    for msg in await sub.fetch(min(remaining, FETCH_BATCH), timeout=timeout):
                        remaining = msg.metadata.num_pending
                        if msg.headers and (
                            msg.headers.get(KV_OP) in (KV_DEL, KV_PURGE) or "Nats-Marker-Reason" in msg.headers
                        ):  # a TTL marker
                            continue
                        found.append(
                            KeyValue.Entry(
                                bucket=kv._name,
                                key=msg.subject[len(prefix) :],
                                value=msg.data,
                                revision=msg.metadata.sequence.stream,
                                delta=msg.metadata.num_pending,
                                created=None,
                                operation=None,
                            )
                        )
            finally:
                await sub.unsubscribe()
    finally:
        try:
            await js.delete_consumer(stream, consumer.name)
        except (nats.js.errors.NotFoundError, nats.errors.TimeoutError):
            pass  # gone already, or the server drops it after ABANDONED_AFTER_S
    return found
