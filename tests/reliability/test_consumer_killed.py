"""R-JS-1: a consumer SIGKILLed at random points mid-message, twenty times, loses nothing.

A worker process (the real `request_consumer` of zocrates_runtime.bus) handles N requests;
it is killed before the side effect, after it but before the ack, while the ack is still in
the client, and from outside at a random moment, then restarted on the same durable
consumer. Every published request must have its effect exactly once (an idempotency table
keyed by message id), the consumer must end with nothing pending, and nothing may be lost.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import time

import pytest

from harness.processes import kill, spawn, wait_ready
from harness.waiting import wait_until
from reliability.report import percentile
from reliability.workers.effects_worker import ACK_WAIT_S, DURABLE, MAX_DELIVER, open_db
from zocrates_contracts import RetrievalRequested
from zocrates_contracts.subjects import AUDIT_STREAM, DLQ_STREAM, RETRIEVAL_REQUESTED
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings

pytestmark = [pytest.mark.connected, pytest.mark.slow, pytest.mark.timeout(240)]

JOBS = 1000
KILLS = 20
PHASES = ["before_effect", "after_effect", "during_ack", "none"]
REPLY_TO = "zocrates.reply.rjs1.retrieval"


def count(db_path, sql: str) -> int:
    with sqlite3.connect(db_path, timeout=10) as db:
        return db.execute(sql).fetchone()[0]


async def stored(js, stream: str, subject: str) -> int:
    """Messages stored on one subject (`state.messages` counts the whole stream)."""
    info = await js.stream_info(stream, subjects_filter=subject)
    return sum((info.state.subjects or {}).values())


async def test_consumer_sigkilled_twenty_times_applies_every_effect_once_and_loses_nothing(
    nats_server, tmp_path, report
):
    rng = random.Random(1)
    db_path = str(tmp_path / "effects.sqlite")
    open_db(db_path).close()
    effects = lambda: count(db_path, "SELECT count(*) FROM effects")  # noqa: E731
    publisher = bus.make_broker(ZocratesSettings(nats_url=nats_server.url))
    await publisher.start()
    await bus.ensure_streams(publisher)
    js = publisher.config.connection_state.stream

    phase, kill_after = PHASES[0], rng.randint(5, 30)
    worker = spawn("reliability.workers.effects_worker", nats_server.url, db_path, phase, str(kill_after))
    recover_times, kinds = [], []
    try:
        await wait_ready(worker)  # the durable consumer exists before anything is published
        requests = [
            RetrievalRequested(turn_id=f"t{i}", session_id="s", user_id="u", query=f"q{i}", reply_to=REPLY_TO)
            for i in range(JOBS)
        ]
        for start in range(0, JOBS, 100):
            await asyncio.gather(*(bus.publish(publisher, r) for r in requests[start : start + 100]))

        for k in range(KILLS):
            before = effects()
            if phase == "none":  # killed from outside after a random number of effects
                await wait_until(lambda: effects() >= before + kill_after, 30, "effects before the kill")
                await asyncio.sleep(rng.random() * 0.05)  # a random point inside the next messages
                kill(worker)
            else:
                await asyncio.wait_for(asyncio.to_thread(worker.wait), 30)
            killed_at, dead_pid = time.monotonic(), worker.pid
            assert worker.returncode == -9, f"worker exited {worker.returncode}, not by SIGKILL"
            kinds.append(phase)
            phase = "none" if k == KILLS - 1 else PHASES[(k + 1) % len(PHASES)]
            kill_after = rng.randint(5, 30)
            worker = spawn(
                "reliability.workers.effects_worker",
                nats_server.url,
                db_path,
                "none" if k == KILLS - 1 else phase,
                str(kill_after),
            )
            await wait_ready(worker)
            await wait_until(
                lambda: count(
                    db_path, f"SELECT count(*) FROM deliveries WHERE pid != {dead_pid} AND pid = {worker.pid}"
                ),
                30,
                "the restarted worker's first delivery",
            )
            recover_times.append(time.monotonic() - killed_at)

        await wait_until(lambda: effects() >= JOBS, 90, f"{JOBS} effects")

        async def drained():
            info = await js.consumer_info(AUDIT_STREAM, DURABLE)
            return info if info.num_pending == 0 and info.num_ack_pending == 0 else None

        info = await wait_until(drained, 3 * ACK_WAIT_S * MAX_DELIVER, "consumer drained")
    finally:
        kill(worker)

    applied = effects()
    distinct = count(db_path, "SELECT count(DISTINCT message_id) FROM effects")
    suppressed = count(db_path, "SELECT count(*) FROM suppressed")
    dlq = await stored(js, DLQ_STREAM, f"dlq.{RETRIEVAL_REQUESTED}")
    replies = await stored(js, AUDIT_STREAM, REPLY_TO)
    deliveries = count(db_path, "SELECT count(*) FROM deliveries")
    redelivered = deliveries - count(db_path, "SELECT count(DISTINCT message_id) FROM deliveries")
    published_ids = {r.message_id for r in requests}
    with sqlite3.connect(db_path) as db:
        effect_ids = {row[0] for row in db.execute("SELECT message_id FROM effects")}
    await publisher.stop()
    lost = len(published_ids - effect_ids) - dlq
    report(
        "R-JS-1",
        published=JOBS,
        effects=applied,
        duplicates_suppressed=suppressed,
        deliveries=deliveries,
        redeliveries=redelivered,
        dead_lettered=dlq,
        lost=lost,
        kills=len(kinds),
        kills_by_phase={p: kinds.count(p) for p in PHASES},
        replies_stored=replies,
        recover_p50_s=round(percentile(recover_times, 50), 2),
        recover_p95_s=round(percentile(recover_times, 95), 2),
    )
    assert len(kinds) == KILLS
    assert effect_ids == published_ids and applied == distinct == JOBS, "every request, exactly one effect"
    assert lost == 0 and dlq == 0
    assert info.num_pending == 0 and info.num_ack_pending == 0
    assert suppressed > 0 and redelivered >= suppressed, "kills after the effect cause redeliveries"
    assert replies == JOBS, "a republished reply is a duplicate the stream drops"
