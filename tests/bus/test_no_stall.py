"""A request consumer hands a request to its handler as soon as it arrives, whichever pull
request of the consumer's brought it (issue 14: about one turn in ten on an idle stack waited
~4 s with milliseconds of work).

The stall, traced on a real server: on an idle consumer each pull request expires every fetch
timeout; when the expiry's 408 arrives just after the client's own timer fired, nats-py's
batched fetch reads it as the answer to its next no-wait probe and sends a second, lingering
pull for a whole batch that outlives the fetch (nats-io/nats.py#986). The next message goes to
that leftover pull, the oldest, and the fetch waiting on the inbox keeps waiting for the rest
of a batch until its timeout. The test puts such a leftover pull on the server directly.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import pytest

from harness.requests import request, start_pair
from harness.waiting import eventually
from zocrates_contracts import EvidenceRetrieved, RetrievalRequested
from zocrates_contracts.subjects import AUDIT_STREAM
from zocrates_runtime.bus import FETCH_TIMEOUT_S, Requester

pytestmark = pytest.mark.connected


async def timed(requester: Requester, turn_id: str) -> float:
    started = time.perf_counter()
    reply = await requester.request(request(requester, turn_id=turn_id), timeout=3 * FETCH_TIMEOUT_S)
    assert isinstance(reply, EvidenceRetrieved) and reply.turn_id == turn_id
    return time.perf_counter() - started


async def test_a_request_is_not_held_by_a_pull_left_on_the_server(nats_server):
    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await start_pair(nats_server, handler, max_workers=4)
    try:
        warm = statistics.median([await timed(requester, f"warm{i}") for i in range(5)])

        # A pull for a whole batch on the consumer's own inbox, as the batched fetch leaves
        # behind; it outlives every fetch of this test. nats-py keeps the pull's subjects on
        # the subscription (`_nms`: the consumer's next-message API, `_deliver`: its inbox).
        (subscriber,) = [s for s in service.subscribers if getattr(s, "stream", None)]
        pull = subscriber.subscription
        await service.config.connection_state.connection.publish(
            pull._nms, json.dumps({"batch": 4, "expires": int(6 * FETCH_TIMEOUT_S * 1e9)}).encode(), reply=pull._deliver
        )
        js = gateway.config.connection_state.stream

        async def both_pulls_waiting() -> bool:
            return (await js.consumer_info(AUDIT_STREAM, "retrieval")).num_waiting >= 2

        assert await eventually(both_pulls_waiting, timeout=1)

        # The first request goes to the fetch that was already waiting; from the second on,
        # the leftover pull is the oldest and brings them.
        took = [await timed(requester, f"t{i}") for i in range(3)]
        bound = 10 * warm + 0.5  # a stall is the rest of a fetch: seconds
        assert max(took) < bound, (
            f"requests took {[round(t, 3) for t in took]} s with a pull "
            f"left on the server; a warm one takes {warm:.3f} s"
        )
    finally:
        await gateway.stop()
        await service.stop()


async def test_one_message_per_pull_still_runs_max_workers_handlers_at_once(nats_server):
    running, most = 0, 0

    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.3)
        running -= 1
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await start_pair(nats_server, handler, max_workers=4)
    try:
        replies = await asyncio.gather(
            *(requester.request(request(requester, turn_id=f"t{i}"), timeout=10) for i in range(8))
        )
        assert sorted(r.turn_id for r in replies) == [f"t{i}" for i in range(8)]
        assert most == 4
    finally:
        await gateway.stop()
        await service.stop()
