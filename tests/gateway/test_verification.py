"""A turn's verification fails open per request, never the turn: scores that came back are kept,
a malformed reply or an error leaves only its own pairs unverified, and more pairs than one
request may carry go out in several requests. Over a real nats-server, with a stand-in verifier
on the bus."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from zocrates_contracts import (
    EvidenceChunk,
    PairScore,
    ServiceError,
    TextSpan,
    VerificationCompleted,
    VerificationRequested,
)
from zocrates_contracts.messages import MAX_PAIRS
from zocrates_contracts.subjects import VERIFICATION_REQUESTED
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.context import Gateway
from zocrates_gateway.domain import verification
from zocrates_gateway.turn import verify
from zocrates_runtime import bus

CHUNKS = [
    EvidenceChunk(chunk_id=f"c{i}", item_key=f"ITEM000{i}", title="t", text=f"Passage {i} says so.", score=1.0)
    for i in (1, 2)
]
IDS = dict(turn_id="turn1", session_id="sess1", user_id="alice")


def occurrences(n_per_chunk: int) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(chunk_index=c, occurrence=k + 1, claim=f"claim {c}.{k}", compound=False)
        for c in (1, 2)
        for k in range(n_per_chunk)
    ]


def test_scores_land_in_their_slots_and_the_rest_stay_unverified():
    found = verification.merged(
        occurrences(2),
        [
            PairScore(chunk_index=2, occurrence=1, probability=0.9),
            PairScore(chunk_index=7, occurrence=1, probability=0.1),
        ],
    )
    assert found == {1: [None, None], 2: [0.9, None]}


def test_supporting_spans_land_in_their_slots_and_unscored_occurrences_have_none():
    span = TextSpan(start=0, end=9)
    found = verification.merged_spans(
        occurrences(2),
        [
            PairScore(chunk_index=1, occurrence=2, probability=0.9, spans=[span]),
            PairScore(chunk_index=9, occurrence=1, probability=0.9, spans=[span]),
        ],
    )
    assert found == {1: [[], [span]], 2: [[], []]}


def test_pairs_beyond_one_request_are_split_and_blank_ones_left_out():
    many = occurrences(600) + [SimpleNamespace(chunk_index=1, occurrence=601, claim="  ", compound=False)]
    pairs = verification.pairs_for(many, CHUNKS)
    assert len(pairs) == 1200
    assert [len(b) for b in verification.batches(pairs)] == [MAX_PAIRS, MAX_PAIRS, 1200 - 2 * MAX_PAIRS]


def test_the_writer_s_quotes_go_out_quoted_and_nothing_else_does():
    # Chunk 1 is quoted by its first two occurrences, chunk 2 by none; a language model's
    # answer (no quotes) sends nothing quoted.
    pairs = verification.pairs_for(occurrences(3), CHUNKS, {1: [0.9, 0.4], 2: []})
    assert [(p.chunk_index, p.occurrence, p.quoted) for p in pairs] == [
        (1, 1, True),
        (1, 2, True),
        (1, 3, False),
        (2, 1, False),
        (2, 2, False),
        (2, 3, False),
    ]
    assert not any(p.quoted for p in verification.pairs_for(occurrences(3), CHUNKS))


@pytest.fixture
async def gateway(nats_server):
    gw = Gateway.create(GatewaySettings(nats_url=nats_server.url, instance_id="gwtest", verification_timeout_s=10.0))
    await gw.start()
    yield gw
    await gw.stop()


async def serve(nats_server, answer) -> object:
    """A verifier on the bus answering each request with `answer(request)`."""
    from zocrates_runtime.settings import ZocratesSettings

    broker = bus.make_broker(ZocratesSettings(nats_url=nats_server.url, instance_id="verifier"))
    bus.request_consumer(broker, VerificationRequested, durable="verifier-test", service="verifier")(answer)
    await broker.start()
    return broker


def scored(request: VerificationRequested, probability: float = 0.8, **extra) -> VerificationCompleted:
    return VerificationCompleted(
        **request.reply_fields(),
        provider="stand-in",
        model="m",
        **extra,
        scores=[
            PairScore(chunk_index=p.chunk_index, occurrence=p.occurrence, probability=probability)
            for p in request.pairs
        ],
    )


@pytest.mark.connected
async def test_more_pairs_than_one_request_carries_are_all_scored(nats_server, gateway):
    sizes = []

    async def answer(request: VerificationRequested) -> VerificationCompleted:
        sizes.append(len(request.pairs))
        return scored(request)

    verifier = await serve(nats_server, answer)
    try:
        probabilities, _, summary = await verify(gateway, IDS, CHUNKS, occurrences(300))
    finally:
        await verifier.stop()
    assert sorted(sizes) == [600 - MAX_PAIRS, MAX_PAIRS]
    assert all(p == 0.8 for values in probabilities.values() for p in values)
    assert summary.note is None and summary.provider == "stand-in"


@pytest.mark.connected
async def test_an_error_reply_keeps_the_scores_it_carries(nats_server, gateway):
    async def answer(request: VerificationRequested) -> VerificationCompleted:
        reply = scored(request, error=ServiceError(code="internal", message="one pair failed"))
        return reply.model_copy(update={"scores": reply.scores[:1]})

    verifier = await serve(nats_server, answer)
    try:
        probabilities, _, summary = await verify(gateway, IDS, CHUNKS, occurrences(1))
    finally:
        await verifier.stop()
    assert probabilities == {1: [0.8], 2: [None]}
    assert "one pair failed" in summary.note


@pytest.mark.connected
async def test_a_malformed_reply_fails_open_with_a_note(nats_server, gateway):
    import nats

    nc = await nats.connect(nats_server.url)

    async def garbage(msg):
        request = VerificationRequested.model_validate_json(msg.data)
        await nc.publish(
            request.reply_to,
            json.dumps({"scores": "not a list"}).encode(),
            headers={"Nats-Msg-Id": request.reply_fields()["message_id"]},
        )

    await nc.subscribe(VERIFICATION_REQUESTED, cb=garbage)
    await nc.flush()
    try:
        probabilities, spans, summary = await verify(gateway, IDS, CHUNKS, occurrences(1))
    finally:
        await nc.close()
    assert probabilities == {1: [None], 2: [None]} and spans == {1: [[]], 2: [[]]}
    assert "MalformedReply" in summary.note
