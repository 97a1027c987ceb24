"""A lost ack: the request is redelivered, the handler runs again, the reply is stored once."""

from __future__ import annotations

import pytest
from faststream.nats.message import NatsMessage

from harness.requests import request, start_pair
from harness.waiting import eventually
from zocrates_contracts import EvidenceRetrieved, RetrievalRequested
from zocrates_contracts.subjects import AUDIT_STREAM, RETRIEVAL_COMPLETED, reply_subject

pytestmark = pytest.mark.connected


async def test_redelivery_after_a_lost_ack_runs_again_but_the_reply_is_stored_once(nats_server, monkeypatch):
    calls = []

    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        calls.append(1)
        return EvidenceRetrieved(**req.reply_fields())

    real_ack = NatsMessage.ack
    lost = []

    async def flaky_ack(self, *args, **kwargs):
        if not lost:
            lost.append(1)
            raise ConnectionError("ack lost on the wire")
        return await real_ack(self, *args, **kwargs)

    monkeypatch.setattr(NatsMessage, "ack", flaky_ack)
    service, gateway, requester = await start_pair(nats_server, handler, ack_wait=1.0)
    try:
        reply = await requester.request(request(requester), timeout=5)
        assert reply.error is None
        js = gateway.config.connection_state.stream

        async def redelivery_acked() -> bool:  # run again, its reply published, then acked
            consumer = await js.consumer_info(AUDIT_STREAM, "retrieval")
            return len(calls) == 2 and consumer.num_ack_pending == 0 and consumer.num_pending == 0

        await eventually(redelivery_acked, timeout=5)  # AckWait is 1 s
        assert len(calls) == 2, "the un-acked request must be redelivered"
        info = await js.stream_info(AUDIT_STREAM, subjects_filter=reply_subject("gw1", RETRIEVAL_COMPLETED))
        assert sum(info.state.subjects.values()) == 1, "the second reply is a duplicate, dropped"
        consumer = await js.consumer_info(AUDIT_STREAM, "retrieval")
        assert consumer.num_ack_pending == 0 and consumer.num_pending == 0
    finally:
        await service.stop()
        await gateway.stop()
