"""The request/reply path over a real nats-server: acks, redelivery, dead letters, dedup."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from faststream.nats import NatsBroker

from harness.requests import request, start_pair
from harness.waiting import wait_until
from zocrates_contracts import EvidenceRetrieved, RetrievalRequested, ServiceError
from zocrates_contracts.subjects import AUDIT_STREAM, DLQ_STREAM, RETRIEVAL_REQUESTED
from zocrates_runtime.bus import TransientError, ensure_streams, make_broker
from zocrates_runtime.settings import ZocratesSettings

pytestmark = pytest.mark.connected


async def stop(*brokers: NatsBroker) -> None:
    for broker in brokers:
        await broker.stop()


async def test_reply_reaches_the_requester(nats_server):
    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await start_pair(nats_server, handler)
    try:
        reply = await requester.request(request(requester), timeout=5)
        assert isinstance(reply, EvidenceRetrieved) and reply.turn_id == "t1"
    finally:
        await stop(gateway, service)


async def test_transient_error_is_retried_with_delay_then_answered(nats_server):
    calls = []

    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        calls.append(asyncio.get_running_loop().time())
        if len(calls) < 3:
            raise TransientError("index warming up", delay=0.2)
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await start_pair(nats_server, handler)
    try:
        reply = await requester.request(request(requester), timeout=10)
        assert reply.error is None
        assert len(calls) == 3
        assert all(b - a >= 0.15 for a, b in zip(calls, calls[1:]))
    finally:
        await stop(gateway, service)


async def test_always_failing_handler_dead_letters_and_answers_with_an_error(nats_server):
    calls = []

    async def handler(req: RetrievalRequested) -> EvidenceRetrieved:
        calls.append(1)
        raise RuntimeError("boom")

    service, gateway, requester = await start_pair(nats_server, handler, max_deliver=3, retry_delay=0.1)
    try:
        reply = await requester.request(request(requester), timeout=10)
        assert reply.error is not None and reply.error.code == "internal"
        assert len(calls) == 3
        js = gateway.config.connection_state.stream
        assert (await js.stream_info(DLQ_STREAM)).state.messages == 1
    finally:
        await stop(gateway, service)


async def test_poison_payload_goes_to_the_dead_letter_stream_not_the_handler(nats_server):
    calls = []

    async def handler(req):
        calls.append(1)

    service, gateway, requester = await start_pair(nats_server, handler)
    try:
        js = gateway.config.connection_state.stream
        await js.publish(RETRIEVAL_REQUESTED, b'{"not": "a request"}')

        async def dead_lettered() -> int:
            return (await js.stream_info(DLQ_STREAM)).state.messages

        await wait_until(dead_lettered, 5, "the payload in the dead-letter stream")
        dlq = await js.get_last_msg(DLQ_STREAM, f"dlq.{RETRIEVAL_REQUESTED}")
        assert dlq.data == b'{"not": "a request"}'
        assert "invalid RetrievalRequested" in dlq.headers["Zocrates-Dlq-Reason"]
        assert calls == []
    finally:
        await stop(gateway, service)


async def test_expired_request_never_reaches_the_handler(nats_server):
    calls = []

    async def handler(req):
        calls.append(1)
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await start_pair(nats_server, handler)
    try:
        past = datetime.now(UTC) - timedelta(seconds=1)
        with pytest.raises(TimeoutError):
            await requester.request(request(requester, deadline=past), timeout=0.5)
        fresh = await requester.request(request(requester, turn_id="t2"), timeout=5)
        assert fresh.turn_id == "t2" and calls == [1]
    finally:
        await stop(gateway, service)


async def test_duplicate_publish_is_stored_once(nats_server):
    async def handler(req):
        return EvidenceRetrieved(**req.reply_fields())

    service, gateway, requester = await start_pair(nats_server, handler)
    try:
        req = request(requester)
        first = await requester.request(req, timeout=5)
        js = gateway.config.connection_state.stream
        before = (await js.stream_info(AUDIT_STREAM)).state.messages
        from zocrates_runtime.bus import publish

        ack = await publish(gateway, req)
        assert ack.duplicate
        assert (await js.stream_info(AUDIT_STREAM)).state.messages == before
        assert first.error is None
    finally:
        await stop(gateway, service)


async def test_error_reply_carries_service_error(nats_server):
    async def handler(req):
        return EvidenceRetrieved(
            **req.reply_fields(),
            error=ServiceError(code="not_available", message="library not indexed", service="retrieval"),
        )

    service, gateway, requester = await start_pair(nats_server, handler)
    try:
        reply = await requester.request(request(requester), timeout=5)
        assert reply.error.code == "not_available"
    finally:
        await stop(gateway, service)


async def test_services_authenticate_to_a_server_that_requires_credentials(tmp_path):
    """Regression (issue 8 rehearsal): faststream 0.7.8 rejects user=/password= keywords."""
    from zocrates_runtime.natsserver import NatsServer

    server = NatsServer(tmp_path / "js", extra_args=["--user", "zocrates", "--pass", "s3cret"]).start()
    try:
        settings = ZocratesSettings(
            nats_url=server.url, nats_user="zocrates", nats_password="s3cret", mode="hosted", token_pepper="x"
        )
        broker = make_broker(settings)
        await broker.connect()
        await ensure_streams(broker)
        assert (await broker.config.connection_state.stream.stream_info(AUDIT_STREAM)).config.name
        await broker.stop()
    finally:
        server.stop()
