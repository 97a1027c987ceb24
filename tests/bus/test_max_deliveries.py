"""A request whose every delivery hangs (no ack, no heartbeat) ends in the dead-letter stream,
and its requester is told at once instead of waiting for its own deadline."""

from __future__ import annotations

import asyncio

import pytest

from zocrates_contracts import RetrievalRequested
from zocrates_contracts.subjects import DLQ_STREAM, RETRIEVAL_REQUESTED
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings

pytestmark = pytest.mark.connected


async def test_exhausted_deliveries_are_dead_lettered_and_answered(nats_server, monkeypatch):
    async def no_heartbeat(msg, ack_wait):  # a hung worker sends no in-progress either
        await asyncio.Event().wait()

    monkeypatch.setattr(bus, "_heartbeat", no_heartbeat)
    settings = ZocratesSettings(nats_url=nats_server.url)
    # the hung handlers would hold a graceful stop for its full 15 s
    service, gateway = bus.make_broker(settings, graceful_timeout=0.5), bus.make_broker(settings)
    deliveries = []

    @bus.request_consumer(
        service, RetrievalRequested, durable="retrieval", ack_wait=0.5, max_deliver=2, service="retrieval"
    )
    async def hang(req):
        deliveries.append(1)
        await asyncio.Event().wait()

    requester = bus.Requester(gateway, "gw")
    await gateway.start()
    await bus.ensure_streams(gateway)
    await service.start()
    try:
        request = RetrievalRequested(
            turn_id="t", session_id="s", user_id="u", query="q", reply_to=requester.reply_to(RetrievalRequested)
        )
        reply = await requester.request(request, timeout=10)
        assert reply.error is not None and "deliveries" in reply.error.message
        assert len(deliveries) == 2
        js = gateway.config.connection_state.stream
        dlq = await js.get_last_msg(DLQ_STREAM, f"dlq.{RETRIEVAL_REQUESTED}")
        assert RetrievalRequested.model_validate_json(dlq.data) == request
    finally:
        await service.stop()
        await gateway.stop()
