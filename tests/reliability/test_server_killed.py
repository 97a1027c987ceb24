"""R-JS-2: nats-server SIGKILLed five times under publish load; every PubAck'd message survives once.

Sixteen publishers send requests through `zocrates_runtime.bus.publish`, which retries a
message with the same `Nats-Msg-Id` until it is PubAck'd (and the test retries it again,
still with the same id, should that give up). The server is SIGKILLed and
restarted on the same store directory five times. Afterwards the stream holds exactly the
acked ids: none missing (acked data outlives a kill) and none twice (a retry of a message
that was stored but whose ack was lost is dropped by the duplicate window).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from harness.waiting import wait_until
from zocrates_contracts import RetrievalRequested
from zocrates_contracts.subjects import AUDIT_STREAM, RETRIEVAL_REQUESTED
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings

pytestmark = [pytest.mark.connected, pytest.mark.timeout(120)]

KILLS = 5
PUBLISHERS = 16
PER_KILL = 300  # acks between two kills: the load is on when the server dies


async def test_server_sigkilled_under_publish_load_keeps_every_acked_message_once(fresh_nats_server, report):
    broker = bus.make_broker(ZocratesSettings(nats_url=fresh_nats_server.url))
    await broker.start()
    await bus.ensure_streams(broker)
    js = broker.config.connection_state.stream
    assert (await js.stream_info(AUDIT_STREAM)).config.duplicate_window == bus.DUPLICATE_WINDOW_S

    acked: list[str] = []
    duplicates, stalls, gave_up = 0, [], {}
    stop = asyncio.Event()
    sequence = iter(range(10**9))

    async def publisher() -> None:
        nonlocal duplicates
        while not stop.is_set():
            i = next(sequence)
            request = RetrievalRequested(
                turn_id=f"t{i}", session_id="s", user_id="u", query=f"q{i}", reply_to="zocrates.reply.rjs2.retrieval"
            )
            first = time.monotonic()
            while True:  # the same message (same Nats-Msg-Id) until it is acked
                try:
                    ack = await bus.publish(broker, request)
                    break
                except Exception as exc:  # noqa: BLE001 - bus.publish gave up (15 s): retry, same id
                    gave_up[type(exc).__name__] = gave_up.get(type(exc).__name__, 0) + 1
                    await asyncio.sleep(0.05)
            duplicates += bool(ack.duplicate)
            stalls.append(time.monotonic() - first)
            acked.append(request.message_id)

    tasks = [asyncio.create_task(publisher()) for _ in range(PUBLISHERS)]
    try:
        for k in range(KILLS):
            target = len(acked) + PER_KILL
            await wait_until(lambda: len(acked) >= target, 30, f"{target} acks before kill {k + 1}")
            await asyncio.to_thread(fresh_nats_server.restart)  # SIGKILL, then start on the same -sd
        await wait_until(lambda: len(acked) >= target + PER_KILL, 30, "publishing resumed after the last kill")
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)

    info = await js.stream_info(AUDIT_STREAM, subjects_filter=RETRIEVAL_REQUESTED)
    stored = sum((info.state.subjects or {}).values())
    sub = await js.subscribe(RETRIEVAL_REQUESTED, ordered_consumer=True)
    ids = []
    for _ in range(stored):
        ids.append((await sub.next_msg(timeout=5)).headers["Nats-Msg-Id"])
    await sub.unsubscribe()
    await broker.stop()
    report(
        "R-JS-2",
        kills=KILLS,
        acked=len(acked),
        unique_acked=len(set(acked)),
        stored=stored,
        missing=len(set(acked) - set(ids)),
        stored_twice=len(ids) - len(set(ids)),
        duplicate_pubacks=duplicates,
        max_publish_stall_s=round(max(stalls), 2),
        publish_gave_up=gave_up,
    )
    assert len(set(acked)) == len(acked), "each message is acked once by its publisher"
    assert set(ids) == set(acked), "every acked id is readable after the restarts, and nothing else"
    assert len(ids) == len(set(ids)) == stored == len(acked), "no id stored twice"
