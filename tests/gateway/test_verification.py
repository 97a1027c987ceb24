"""A turn's verification fails open per request, never the turn: scores that came back are kept,
a malformed reply or an error leaves only its own pairs unverified, and more pairs than one
request may carry go out in several requests. Over a real nats-server, with a stand-in verifier
on the bus."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from harness.system import FakeVerifier
from zocrates_citations import parse_answer
from zocrates_contracts import (
    EvidenceChunk,
    PairScore,
    ServiceError,
    TextSpan,
    VerificationCompleted,
    VerificationRequested,
)
from zocrates_contracts.messages import MAX_PAIRS, MAX_SOURCE_CHARS
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


def test_unprinted_numbers_land_in_their_slots_and_a_joint_score_s_are_not_an_occurrence_s():
    found = verification.merged_unprinted(
        occurrences(2),
        [
            PairScore(chunk_index=2, occurrence=1, probability=0.2, unprinted_numbers=["783"]),
            PairScore(chunk_index=1, occurrence=1, probability=0.2, unprinted_numbers=["12"], joint=True),
        ],
    )
    assert found == {1: [[], []], 2: [["783"], []]}


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


def test_a_bracket_of_several_passages_adds_one_joint_pair_and_a_single_bracket_none():
    chunks = [*CHUNKS, CHUNKS[0].model_copy(update={"chunk_id": "c3", "text": "Passage 3 agrees."})]
    answer = parse_answer("Rates rose in twins [1][3]. Costs fell [2]. Both hold [1, 2]. Again [2][2].", 3)
    pairs = verification.pairs_for(answer.occurrences, chunks) + verification.joint_pairs(answer.brackets, chunks)
    plain = [p for p in pairs if not p.joint]
    joint = [p for p in pairs if p.joint]
    assert len(plain) == len(answer.occurrences) == 7 and not any(p.passage_starts for p in plain)
    assert [(p.chunk_index, p.occurrence, p.claim, p.source_text, p.passage_starts) for p in joint] == [
        (1, 1, "Rates rose in twins.", "Passage 1 says so.\n\nPassage 3 agrees.", [0, 20]),
        (1, 2, "Both hold.", "Passage 1 says so.\n\nPassage 2 says so.", [0, 20]),
    ]
    assert verification.joint_pairs(parse_answer("Costs fell [2]. Again [1].", 2).brackets, CHUNKS) == []


def test_a_joint_pair_holds_an_equal_share_of_every_long_passage():
    long = [c.model_copy(update={"text": f"{c.chunk_id} " + "word " * 10_000}) for c in CHUNKS]
    (pair,) = verification.joint_pairs(parse_answer("Rates rose in twins [1, 2].", 2).brackets, long)
    assert len(pair.source_text) <= MAX_SOURCE_CHARS
    first, second = pair.source_text[: pair.passage_starts[1]], pair.source_text[pair.passage_starts[1] :]
    assert first.startswith("c1 ") and second.startswith("c2 ") and abs(len(first) - 2 - len(second)) <= 1


def test_a_joint_score_lands_on_every_occurrence_of_its_bracket_and_never_on_an_index_alone():
    answer = parse_answer("Rates rose in twins [1][2]. Costs fell [2].", 2)
    scores = [
        PairScore(chunk_index=1, occurrence=1, probability=0.3),
        PairScore(chunk_index=2, occurrence=1, probability=0.2),
        PairScore(chunk_index=2, occurrence=2, probability=0.9),
        PairScore(chunk_index=1, occurrence=1, probability=0.8, joint=True),
    ]
    assert verification.merged(answer.occurrences, scores) == {1: [0.3], 2: [0.2, 0.9]}
    assert verification.joint_merged(answer.occurrences, answer.brackets, scores) == {1: [0.8], 2: [0.8, None]}
    failed = [*scores[:3], PairScore(chunk_index=1, occurrence=1, joint=True)]
    assert verification.joint_merged(answer.occurrences, answer.brackets, failed) == {1: [None], 2: [None, None]}
    assert verification.merged(answer.occurrences, failed) == {1: [0.3], 2: [0.2, 0.9]}


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
            PairScore(chunk_index=p.chunk_index, occurrence=p.occurrence, probability=probability, joint=p.joint)
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
        probabilities, _, summary, *_ = await verify(gateway, IDS, CHUNKS, occurrences(300))
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
        probabilities, _, summary, *_ = await verify(gateway, IDS, CHUNKS, occurrences(1))
    finally:
        await verifier.stop()
    assert probabilities == {1: [0.8], 2: [None]}
    assert "one pair failed" in summary.note


@pytest.mark.connected
async def test_a_malformed_reply_fails_open_with_a_note(nats_server, gateway):
    import nats

    nc = await nats.connect(nats_server.url)
    seen: list[str] = []  # what the stand-in did, to tell a lost request from a lost reply

    async def garbage(msg):
        try:
            request = VerificationRequested.model_validate_json(msg.data)
            await nc.publish(
                request.reply_to,
                json.dumps({"scores": "not a list"}).encode(),
                headers={"Nats-Msg-Id": request.reply_fields()["message_id"]},
            )
            await nc.flush()
            seen.append(f"replied to {request.reply_to}")
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            seen.append(f"failed: {exc!r}")

    await nc.subscribe(VERIFICATION_REQUESTED, cb=garbage)
    await nc.flush()
    try:
        probabilities, spans, summary, *_ = await verify(gateway, IDS, CHUNKS, occurrences(1))
    finally:
        await nc.close()
    assert probabilities == {1: [None], 2: [None]} and spans == {1: [[]], 2: [[]]}
    assert "MalformedReply" in summary.note, (summary.note, seen or "the request never reached the stand-in")


class JointVerifier(FakeVerifier):
    """Scores each index alone at `probability` and a bracket's joint pair at `joint`."""

    def __init__(self, probability: float | None, joint: float | None) -> None:
        super().__init__(probability=probability)
        self.joint = joint
        self.requests: list[VerificationRequested] = []

    async def verify(self, request: VerificationRequested) -> VerificationCompleted:
        self.requests.append(request)
        reply = await super().verify(request)
        scores = [s.model_copy(update={"probability": self.joint, "spans": []}) if s.joint else s for s in reply.scores]
        return reply.model_copy(update={"scores": scores})


JOINT_ANSWER = [
    "Somatic mutation rates were estimated in twins with an attention function over key-value pairs [1][2]. ",
    "Retrieval augmented generation combines a retriever with a generator [3].",
]


@pytest.mark.connected
@pytest.mark.parametrize("joint", [0.8, None])
async def test_a_bracket_supported_only_as_a_whole_is_stored_with_its_joint_support(nats_server, joint):
    from harness.llm import LoopbackModel
    from harness.serving import serving
    from harness.system import running_system

    verifier = JointVerifier(probability=0.3, joint=joint)
    model = LoopbackModel(JOINT_ANSWER)
    async with (
        serving(model.app) as llm,
        running_system(nats_server.url, verifier=verifier, llm_synthesizer_url=f"{llm}/v1") as system,
    ):
        done = (await system.chat("How were mutation rates estimated?"))[-1]["data"]
        response = await system.client.get(f"{system.url}/sessions/{done['session_id']}", headers=system.auth)
        # Resolved again from the stored audit (`POST /citations/resolve`): the joint checks are kept.
        ids = {"session_id": done["session_id"], "turn_id": done["turn_id"]}
        again = (await system.client.post(f"{system.url}/citations/resolve", json=ids, headers=system.auth)).json()
    stored = response.json()["turns"][0]
    assert again["citations"] == stored["citations"] and again["quality"] == stored["quality"]
    assert stored == done and stored["schema_version"] == 7
    # One request: a pair per index, then the bracket's joint pair over both passages.
    (request,) = verifier.requests
    assert [(p.chunk_index, p.occurrence, p.joint) for p in request.pairs] == [
        (1, 1, False),
        (2, 1, False),
        (3, 1, False),
        (1, 1, True),
    ]
    assert request.pairs[3].source_text.count("\n\n") >= 1 and len(request.pairs[3].passage_starts) == 2
    found = {
        c["index"]: (o["probability"], o["verdict"], o["joint_support"])
        for c in stored["citations"]
        for o in c["occurrences"]
    }
    # Each index alone stays below the threshold whatever the joint check said.
    assert found == {1: (0.3, "DEMOTED", joint), 2: (0.3, "DEMOTED", joint), 3: (0.3, "DEMOTED", None)}
    quality = stored["quality"]
    assert quality["claims"] == 2 and quality["supported"] == (1 if joint else 0)
    assert (quality["citations"], quality["supporting"]) == (3, 0)
