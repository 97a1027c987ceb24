"""R-JS-3, R-JS-4, R-JS-5: dead letters, long jobs and lost acks through the real bus glue.

The behaviours are tested in tests/bus (test_request_reply.py: poison payload and an always
failing handler; test_max_deliveries.py: a hung worker; test_redelivery.py: one lost ack;
test_ack_policy_guard.py: no subscriber on faststream's default ack policy). These tests add
what the plan asks to be measured: retries and time to the dead-letter stream with the
payload compared by stream sequence, redeliveries of a job four times longer than AckWait,
and duplicate deliveries against duplicate effects over many lost acks.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from faststream.nats.message import NatsMessage

from harness.waiting import wait_until
from zocrates_contracts import EvidenceRetrieved, RetrievalRequested
from zocrates_contracts.subjects import AUDIT_STREAM, DLQ_STREAM, RETRIEVAL_REQUESTED
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings

pytestmark = pytest.mark.connected


async def started(nats_server, handler, **consumer):
    settings = ZocratesSettings(nats_url=nats_server.url)
    service, gateway = bus.make_broker(settings, graceful_timeout=0.5), bus.make_broker(settings)
    bus.request_consumer(service, RetrievalRequested, durable="retrieval", service="retrieval", **consumer)(handler)
    requester = bus.Requester(gateway, "gw")
    await gateway.start()
    await bus.ensure_streams(gateway)
    await service.start()
    return service, gateway, requester


def request(requester, query: str, **kw) -> RetrievalRequested:
    return RetrievalRequested(
        turn_id=kw.pop("turn_id", "t"),
        session_id="s",
        user_id="u",
        query=query,
        reply_to=requester.reply_to(RetrievalRequested),
        **kw,
    )


async def test_poison_failing_and_hung_requests_reach_the_dead_letter_stream_with_their_payload(
    nats_server, monkeypatch, report
):
    calls: dict[str, int] = {}
    hung = asyncio.Event()

    async def handler(req: RetrievalRequested):
        calls[req.query] = calls.get(req.query, 0) + 1
        if req.query == "always-fails":
            raise RuntimeError("permanent bug")
        if req.query == "hangs":
            await hung.wait()  # and sends no heartbeat: see below
        return EvidenceRetrieved(**req.reply_fields())

    real_heartbeat = bus._heartbeat

    async def heartbeat(msg, ack_wait):  # a hung worker sends no in-progress either
        if b'"hangs"' in msg.body:
            await asyncio.Event().wait()
        await real_heartbeat(msg, ack_wait)

    monkeypatch.setattr(bus, "_heartbeat", heartbeat)
    max_deliver = 3
    service, gateway, requester = await started(
        nats_server, handler, max_deliver=max_deliver, retry_delay=0.1, ack_wait=0.5
    )
    js = gateway.config.connection_state.stream
    figures = {}
    try:
        cases = {
            "poison": b'{"not": "a RetrievalRequested"}',
            "always-fails": request(requester, "always-fails").model_dump_json().encode(),
            "hangs": request(requester, "hangs", turn_id="t2").model_dump_json().encode(),
        }
        for name, payload in cases.items():
            started_at = time.monotonic()
            ack = await js.publish(RETRIEVAL_REQUESTED, payload)

            async def dead_lettered():
                try:
                    dlq = await js.get_last_msg(DLQ_STREAM, f"dlq.{RETRIEVAL_REQUESTED}")
                except Exception:  # noqa: BLE001 - nothing there yet
                    return None
                return dlq if dlq.headers.get("Zocrates-Stream-Seq") == str(ack.seq) else None

            dlq = await wait_until(dead_lettered, 15, f"{name} in the dead-letter stream")
            original = await js.get_msg(AUDIT_STREAM, ack.seq)
            figures[name] = {
                "handler_calls": calls.get(name, 0),
                "time_to_dlq_s": round(time.monotonic() - started_at, 2),
                "payload_equal": dlq.data == original.data == payload,
                "reason": dlq.headers["Zocrates-Dlq-Reason"][:60],
            }
        hung.set()
    finally:
        await service.stop()
        await gateway.stop()
    report(
        "R-JS-3",
        max_deliver=max_deliver,
        **figures,
        dead_lettered=sum(1 for f in figures.values() if f["payload_equal"]),
    )
    assert all(f["payload_equal"] for f in figures.values()), figures
    assert figures["poison"]["handler_calls"] == 0, "a payload that fails validation never reaches the handler"
    assert figures["always-fails"]["handler_calls"] == max_deliver
    assert figures["hangs"]["handler_calls"] == max_deliver
    assert "deliveries" in figures["hangs"]["reason"]


async def test_job_four_times_longer_than_ack_wait_is_never_redelivered(nats_server, report):
    ack_wait, job_s = 1.0, 4.0
    calls = []

    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        calls.append(time.monotonic())
        await asyncio.sleep(job_s)  # the long "GPU" job
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await started(nats_server, handler, ack_wait=ack_wait)
    js = gateway.config.connection_state.stream
    try:
        started_at = time.monotonic()
        reply = await requester.request(request(requester, "long"), timeout=job_s + 5)
        took = time.monotonic() - started_at
        consumer = await wait_until(lambda: _drained(js), 5, "the ack")
    finally:
        await service.stop()
        await gateway.stop()
    redeliveries = consumer.delivered.consumer_seq - 1
    report(
        "R-JS-4",
        ack_wait_s=ack_wait,
        job_s=round(took, 2),
        job_over_ack_wait=round(took / ack_wait, 1),
        handler_calls=len(calls),
        redeliveries=redeliveries,
    )
    assert reply.error is None
    assert len(calls) == 1 and redeliveries == 0


async def _drained(js):
    info = await js.consumer_info(AUDIT_STREAM, "retrieval")
    return info if info.num_ack_pending == 0 and info.num_pending == 0 else None


async def test_lost_acks_redeliver_but_the_reply_effect_is_stored_once(nats_server, monkeypatch, report):
    """The bus's own side effect is the reply it publishes before the ack: a redelivered request
    republishes it with the same derived message id, and the stream keeps one copy."""
    jobs, every = 30, 3
    deliveries: dict[str, int] = {}

    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        deliveries[req.message_id] = deliveries.get(req.message_id, 0) + 1
        return EvidenceRetrieved(**req.reply_fields())

    real_ack = NatsMessage.ack
    acks, lost = [], []

    async def lossy_ack(self, *args, **kwargs):
        acks.append(1)
        if len(acks) % every == 0:
            lost.append(1)
            raise ConnectionError("ack lost on the wire")
        return await real_ack(self, *args, **kwargs)

    monkeypatch.setattr(NatsMessage, "ack", lossy_ack)
    service, gateway, requester = await started(nats_server, handler, ack_wait=1.0)
    js = gateway.config.connection_state.stream
    try:
        replies = await asyncio.gather(
            *(requester.request(request(requester, f"q{i}", turn_id=f"t{i}"), timeout=10) for i in range(jobs))
        )
        await wait_until(lambda: _drained(js), 15, "every delivery acked")
        info = await js.stream_info(AUDIT_STREAM, subjects_filter=requester.reply_to(RetrievalRequested))
        stored_replies = sum((info.state.subjects or {}).values())
    finally:
        await service.stop()
        await gateway.stop()
    duplicate_deliveries = sum(deliveries.values()) - len(deliveries)
    report(
        "R-JS-5",
        jobs=jobs,
        acks_lost=len(lost),
        duplicate_deliveries=duplicate_deliveries,
        duplicate_effects=stored_replies - jobs,
        replies_stored=stored_replies,
    )
    assert all(r.error is None for r in replies)
    assert len(deliveries) == jobs
    assert duplicate_deliveries == len(lost) > 0, "every lost ack was redelivered"
    assert stored_replies == jobs, "each reply stored once, however often it was published"


async def test_a_changed_ack_wait_reaches_the_existing_durable_consumer(nats_server):
    """nats-py binds to an existing durable without comparing configs: a service started with a
    new `ack_wait` (the verifier's went from 30 s to 5 s) updates the consumer in place, keeping
    its position, instead of running on the old AckWait until someone deletes it."""
    from zocrates_runtime.service import service_app

    async def handler(req: RetrievalRequested):
        return EvidenceRetrieved(**req.reply_fields())

    async def run_with(ack_wait: float):
        broker = bus.make_broker(ZocratesSettings(nats_url=nats_server.url))
        bus.request_consumer(broker, RetrievalRequested, durable="retrieval", ack_wait=ack_wait)(handler)
        app = service_app(broker)
        await app.start()
        try:
            js = broker.config.connection_state.stream
            await js.publish(RETRIEVAL_REQUESTED, b"{}")  # a poison message moves the position
            await wait_until(lambda: _acked(js), 5, "the message handled")
            return await js.consumer_info(AUDIT_STREAM, "retrieval")
        finally:
            await app.stop()

    before = await run_with(30.0)
    after = await run_with(5.0)
    assert (before.config.ack_wait, after.config.ack_wait) == (30.0, 5.0)
    assert after.delivered.stream_seq > before.delivered.stream_seq, "the same consumer, moved on"


async def _acked(js) -> bool:
    """Every message of the audit stream delivered to the consumer and acked."""
    info = await js.consumer_info(AUDIT_STREAM, "retrieval")
    last = (await js.stream_info(AUDIT_STREAM)).state.last_seq
    return info.num_ack_pending == 0 and info.delivered.stream_seq == last
