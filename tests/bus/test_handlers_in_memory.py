"""Handler unit tests on faststream's in-memory broker (no server; acks are not exercised
here: delivery guarantees are tested against the real server in the other bus tests)."""

from __future__ import annotations

from unittest.mock import AsyncMock

import pytest
from faststream.nats import TestNatsBroker

from harness.system import FakeVerifier
from zocrates_contracts import (
    DiscoveryRequested,
    VerificationCompleted,
    VerificationPair,
    VerificationRequested,
)
from zocrates_runtime.settings import ZocratesSettings


@pytest.fixture
def settings():
    return ZocratesSettings(nats_url="nats://127.0.0.1:1")


async def test_verifier_handler_replies_to_the_requesters_subject(settings, monkeypatch):
    from zocrates_runtime import bus
    from zocrates_verifier.app import create_app

    published = AsyncMock()
    monkeypatch.setattr(bus, "publish", published)
    app = create_app(settings, service=FakeVerifier(probability=0.75))
    request = VerificationRequested(
        turn_id="t",
        session_id="s",
        user_id="u",
        reply_to="zocrates.reply.gw.verification",
        pairs=[
            VerificationPair(chunk_index=1, occurrence=1, claim="c", source_text="s"),
            VerificationPair(chunk_index=1, occurrence=2, claim="d", source_text="s", compound=True),
        ],
    )
    async with TestNatsBroker(app.broker) as broker:
        await broker.publish(request.model_dump_json(), VerificationRequested.SUBJECT, stream="ZOCRATES")
    _, reply, subject = published.await_args.args
    assert subject == request.reply_to
    assert isinstance(reply, VerificationCompleted)
    assert [(s.chunk_index, s.occurrence, s.probability) for s in reply.scores] == [(1, 1, 0.75), (1, 2, 0.75)]
    assert reply.message_id == request.reply_fields()["message_id"]


async def test_discovery_handler_says_clearly_when_the_internet_is_unreachable(settings, monkeypatch):
    from zocrates_discovery.app import create_app
    from zocrates_discovery.config import DiscoverySettings
    from zocrates_discovery.service import DiscoveryService
    from zocrates_runtime import bus

    published = AsyncMock()
    monkeypatch.setattr(bus, "publish", published)
    closed = "http://127.0.0.1:9"  # nothing listens there: a refused connection, like no internet
    service = DiscoveryService(
        DiscoverySettings(openalex_url=closed, crossref_url=closed, semantic_scholar_url=closed, zotero_dir=None)
    )
    await service.start()
    app = create_app(settings, service=service)
    request = DiscoveryRequested(
        turn_id="t", session_id="s", user_id="u", queries=["q"], reply_to="zocrates.reply.gw.discovery"
    )
    try:
        async with TestNatsBroker(app.broker) as broker:
            await broker.publish(request.model_dump_json(), DiscoveryRequested.SUBJECT, stream="ZOCRATES")
    finally:
        await service.close()
    _, reply, _ = published.await_args.args
    assert reply.candidates == [] and reply.error is not None
    assert reply.error.code == "unreachable" and "OpenAlex" in reply.error.message


@pytest.mark.parametrize(
    ("name", "service_class"),
    [
        ("retrieval", "zocrates_retrieval.service:RetrievalService"),
        ("discovery", "zocrates_discovery.service:DiscoveryService"),
    ],
)
def test_every_request_a_service_answers_names_a_method_of_its_real_service(name, service_class, monkeypatch):
    """`bus.answer_requests` looks its methods up by name per request: a misspelt one would
    only fail on the first request, so each is checked against the real class here."""
    import importlib

    from harness.system import idle_app
    from zocrates_runtime import bus

    module, cls = service_class.split(":")
    real = getattr(importlib.import_module(module), cls)
    tables = []
    register = bus.answer_requests
    monkeypatch.setattr(bus, "answer_requests", lambda *args: (tables.append(args[3]), register(*args)))
    idle_app(name)
    assert tables, f"{name} registers its consumers through bus.answer_requests"
    for request_cls, answer in tables[0].items():
        assert callable(getattr(real, answer.method, None)), (request_cls.__name__, answer.method)
