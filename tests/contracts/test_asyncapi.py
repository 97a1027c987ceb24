"""The bus's AsyncAPI document (libs/contracts/asyncapi.json) matches the code, and the routes it
declares are the subscriptions the services really make (issue 15)."""

from __future__ import annotations

import json

import pytest

from harness.system import BUS_SERVICES, durable_subscriptions, idle_app
from zocrates_contracts import ALL_MESSAGES, REPLY_OF
from zocrates_contracts.asyncapi import CONSUMERS, EVENT_CONSUMERS, GATEWAY, document, routes
from zocrates_contracts.export import ASYNCAPI, SCHEMA_DIR, render


def test_exported_asyncapi_document_matches_the_code():
    assert ASYNCAPI.read_text() == render(document()), (
        "the bus changed: run `make schemas` and commit libs/contracts/asyncapi.json"
    )


def test_every_message_is_routed_and_every_request_has_a_consumer_and_a_reply():
    assert set(CONSUMERS) == set(REPLY_OF)
    assert sorted(m.__name__ for m, *_ in routes()) == sorted(m.__name__ for m in ALL_MESSAGES)
    doc = document()
    for message in ALL_MESSAGES:
        payload = doc["components"]["schemas"][message.__name__]
        exported = json.loads((SCHEMA_DIR / f"{message.__name__}.json").read_text())
        assert (payload["properties"].keys(), payload.get("required")) == (
            exported["properties"].keys(),
            exported.get("required"),
        ), message.__name__
        assert doc["components"]["messages"][message.__name__]["x-schema-version"] == message.SCHEMA_VERSION


def test_the_documents_schemas_resolve_within_the_document():
    text = json.dumps(document())
    doc = json.loads(text)
    for ref in {part.split('"')[0] for part in text.split('"$ref": "')[1:]}:
        node = doc
        for key in ref.removeprefix("#/").split("/"):
            node = node[key]


@pytest.mark.parametrize("name", BUS_SERVICES)
def test_each_service_subscribes_to_exactly_the_requests_the_document_says_it_receives(name):
    subscribed = {(subject, durable) for subject, durable, _ in durable_subscriptions(idle_app(name))}
    consumers = {**CONSUMERS, **EVENT_CONSUMERS}
    declared = {(message.SUBJECT, durable) for message, (service, durable) in consumers.items() if service == name}
    assert subscribed == declared


def test_only_the_gateway_sends_requests_and_receives_replies():
    replies = set(REPLY_OF.values())
    for message, _, sender, receiver in routes():
        if message in REPLY_OF:
            assert sender == GATEWAY
        elif message in replies:
            assert receiver == GATEWAY
        else:  # an event: the gateway publishes it, a service may read it
            assert sender == GATEWAY and message not in CONSUMERS
