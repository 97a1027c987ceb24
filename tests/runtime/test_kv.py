"""`latest_entries`: every current key of a pattern, exactly, and nothing left on the server."""

from __future__ import annotations

import asyncio

import nats
import pytest

from zocrates_runtime.kv import FETCH_BATCH, latest_entries


@pytest.fixture
async def bucket(nats_server):
    nc = await nats.connect(nats_server.url)
    js = nc.jetstream()
    kv = await js.create_key_value(bucket="listing", history=1)
    yield js, kv
    await nc.close()


async def consumers(js) -> int:
    return (await js.stream_info("KV_listing")).state.consumer_count


async def test_lists_the_latest_values_of_matching_keys_without_deleted_ones(bucket):
    js, kv = bucket
    await kv.put("s.alice.one", b"1")
    await kv.put("s.alice.one", b"2")  # only the latest value counts
    await kv.put("s.alice.two", b"x")
    await kv.put("s.alice.gone", b"x")
    await kv.delete("s.alice.gone")
    await kv.put("s.alice.purged", b"x")
    await kv.purge("s.alice.purged")
    await kv.put("s.bob.one", b"b")  # another user's
    found = {e.key: e.value for e in await latest_entries(kv, "s.alice.*")}
    assert found == {"s.alice.one": b"2", "s.alice.two": b"x"}
    assert await latest_entries(kv, "s.carol.*") == []
    assert await consumers(js) == 0  # each listing deletes its consumer


async def test_many_keys_across_fetch_batches_and_concurrent_listings_are_all_exact(bucket):
    js, kv = bucket
    keys = {f"i.alice.user.K{n:07d}" for n in range(FETCH_BATCH * 2 + 7)}
    for chunk in [sorted(keys)[i : i + 200] for i in range(0, len(keys), 200)]:
        await asyncio.gather(*(kv.put(k, b"{}") for k in chunk))
    await kv.put("f.alice.user.K0000001", b"{}")
    # What nats-py's watch got wrong under load: a single key, listed by many at once.
    singles, many = await asyncio.gather(
        asyncio.gather(*(latest_entries(kv, "f.alice.*.*") for _ in range(40))),
        asyncio.gather(*(latest_entries(kv, "i.alice.*.*") for _ in range(4))),
    )
    assert all(len(found) == 1 for found in singles)
    assert all({e.key for e in found} == keys for found in many)
    assert await consumers(js) == 0
