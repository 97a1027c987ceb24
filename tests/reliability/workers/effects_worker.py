"""R-JS-1's worker: the real `request_consumer`, side effects in an idempotency table.

    python -m reliability.workers.effects_worker NATS_URL DB PHASE KILL_AFTER

The effect of a request is a row in SQLite keyed by its message id (`INSERT OR IGNORE`), so a
redelivered request finds its effect already there and is counted as suppressed. The process
SIGKILLs itself once it has handled KILL_AFTER requests, at PHASE:
- `before_effect`: delivered, nothing done yet;
- `after_effect`: the effect is committed, the reply and the ack are not sent;
- `during_ack`: the ack is handed to the client but not yet flushed to the server;
- `none`: never (the test kills it from outside at a random moment, or lets it finish).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
import time

from faststream.nats import message as nats_message

from zocrates_contracts import EvidenceRetrieved, RetrievalRequested
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings

DURABLE = "rjs1"
ACK_WAIT_S = 2.0
MAX_DELIVER = 5


def open_db(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, timeout=10)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE IF NOT EXISTS effects (message_id TEXT PRIMARY KEY, pid INT, at REAL)")
    db.execute("CREATE TABLE IF NOT EXISTS suppressed (message_id TEXT, pid INT, at REAL)")
    db.execute("CREATE TABLE IF NOT EXISTS deliveries (message_id TEXT, pid INT, at REAL)")
    return db


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


async def main(url: str, db_path: str, phase: str, kill_after: int) -> None:
    db = open_db(db_path)
    pid = os.getpid()
    handled = 0
    broker = bus.make_broker(ZocratesSettings(nats_url=url))

    @bus.request_consumer(
        broker,
        RetrievalRequested,
        durable=DURABLE,
        ack_wait=ACK_WAIT_S,
        max_deliver=MAX_DELIVER,
        max_workers=4,
        retry_delay=0.2,
        service="rjs1",
    )
    async def handle(request: RetrievalRequested) -> EvidenceRetrieved:
        nonlocal handled
        db.execute("INSERT INTO deliveries VALUES (?, ?, ?)", (request.message_id, pid, time.time()))
        if phase == "before_effect" and handled >= kill_after:
            die()
        applied = db.execute(
            "INSERT OR IGNORE INTO effects VALUES (?, ?, ?)", (request.message_id, pid, time.time())
        ).rowcount
        if not applied:
            db.execute("INSERT INTO suppressed VALUES (?, ?, ?)", (request.message_id, pid, time.time()))
        handled += 1
        if phase == "after_effect" and handled >= kill_after:
            die()
        return EvidenceRetrieved(**request.reply_fields())

    if phase == "during_ack":
        real_ack = nats_message.NatsMessage.ack

        async def ack_then_die(self, *args, **kwargs):
            await real_ack(self, *args, **kwargs)  # queued in the client, not yet on the wire
            if handled >= kill_after:
                die()

        nats_message.NatsMessage.ack = ack_then_die

    await broker.start()
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
