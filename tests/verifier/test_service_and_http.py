"""The service's reply contract and the HTTP API in the Jev/Laya wire format."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from harness.waiting import Gate, wait_until
from zocrates_contracts import SUPPORT_THRESHOLD
from zocrates_contracts.messages import (
    MAX_SOURCE_CHARS,
    VerificationCompleted,
    VerificationPair,
    VerificationRequested,
)
from zocrates_verifier.adapters.backends import local_torch
from zocrates_verifier.adapters.backends.base import (
    COMPOUND_QUESTION,
    SINGLE_QUESTION,
    Backend,
    BatchModel,
    Pair,
)
from zocrates_verifier.adapters.backends.batched import BatchedBackend
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.http import create_http_app
from zocrates_verifier.service import VerifierService

PASSAGE = "Over five years, aspirin reduced the risk of myocardial infarction by 32%."


class CountingModel(BatchModel):
    """p = len(claim) / 100; records every pair it is asked to score."""

    provider, model = "fake", "counting"

    def __init__(self, gate: threading.Event | None = None):
        self.seen: list[Pair] = []
        self.gate = gate

    def setup(self, device):
        pass

    def cost(self, pair):
        return len(pair.claim)

    def predict(self, pairs):
        if self.gate is not None:
            self.gate.wait(5)
        self.seen.extend(pairs)
        return [min(1.0, len(p.claim) / 100) for p in pairs]


async def started(model: BatchModel | None = None, **settings) -> VerifierService:
    service = VerifierService(VerifierSettings(**settings))
    if model is not None:
        service.provider = model.provider
        service.backend = BatchedBackend(
            model, "cpu", warmup=False, max_wait_s=0.001, max_queue_items=settings.get("max_queue_pairs", 4096)
        )
        await service.backend.start()
    else:
        await service.start()
    return service


def request(*claims: str, deadline: datetime | None = None) -> VerificationRequested:
    return VerificationRequested(
        turn_id="turn1",
        session_id="sess1",
        user_id="user1",
        reply_to="zocrates.reply.g.v",
        deadline=deadline,
        pairs=[
            VerificationPair(chunk_index=i + 1, occurrence=1, claim=c, source_text=PASSAGE, compound=i % 2 == 1)
            for i, c in enumerate(claims)
        ],
    )


async def test_verify_answers_in_request_order_with_the_reply_envelope():
    model = CountingModel()
    service = await started(model)
    req = request("a" * 10, "b" * 20, "c" * 30)
    reply = await service.verify(req)
    assert isinstance(reply, VerificationCompleted)
    assert [s.probability for s in reply.scores] == [0.1, 0.2, 0.3]
    assert [s.chunk_index for s in reply.scores] == [1, 2, 3]
    assert [p.compound for p in model.seen] == [False, True, False] or sorted(p.claim for p in model.seen) == [
        "a" * 10,
        "b" * 20,
        "c" * 30,
    ]
    assert reply.turn_id == "turn1" and reply.message_id == f"{req.message_id}-r"
    assert (reply.provider, reply.model, reply.device) == ("fake", "counting", "cpu")
    assert reply.error is None and reply.latency_ms > 0
    await service.close()


async def test_each_score_says_where_the_passage_supports_its_claim():
    from zocrates_verifier.adapters.backends.heuristic import HeuristicModel

    passage = "Methods were standard.\n" + PASSAGE + " Nothing else was measured."
    service = await started(HeuristicModel())
    reply = await service.verify(
        VerificationRequested(
            turn_id="turn1",
            session_id="sess1",
            user_id="user1",
            reply_to="zocrates.reply.g.v",
            pairs=[
                VerificationPair(
                    chunk_index=1, occurrence=1, claim="Aspirin reduced infarctions by 32%.", source_text=passage
                )
            ],
        )
    )
    [span] = reply.scores[0].spans
    assert passage[span.start : span.end] == PASSAGE
    assert VerificationCompleted.model_validate(reply.model_dump() | {"schema_version": 2}).scores[0].spans
    old = reply.model_dump(mode="json") | {"schema_version": 2}
    old["scores"] = [{"chunk_index": 1, "occurrence": 1, "probability": 0.5}]
    assert VerificationCompleted.model_validate(old).scores[0].spans == []  # a version 2 reply reads with none
    await service.close()


async def test_a_joint_pair_reaches_the_model_with_its_passages_and_its_score_says_joint():
    model = CountingModel()
    service = await started(model)
    joined = PASSAGE + "\n\nBleeding was rare."
    req = request("a" * 10)
    joint = VerificationPair(
        chunk_index=1,
        occurrence=1,
        claim="b" * 20,
        source_text=joined,
        joint=True,
        passage_starts=[0, len(PASSAGE) + 2],
    )
    reply = await service.verify(req.model_copy(update={"pairs": [*req.pairs, joint]}))
    assert [(s.probability, s.joint) for s in reply.scores] == [(0.1, False), (0.2, True)]
    assert sorted(p.passage_starts for p in model.seen) == [(), (0, len(PASSAGE) + 2)]
    await service.close()


async def test_a_backend_that_cannot_say_where_leaves_the_spans_empty():
    service = await started(CountingModel())
    reply = await service.verify(request("a" * 10))
    assert reply.scores[0].probability == 0.1 and reply.scores[0].spans == []
    await service.close()


async def test_request_past_its_deadline_never_reaches_the_model():
    model = CountingModel()
    service = await started(model)
    reply = await service.verify(request("a claim", deadline=datetime.now(UTC) - timedelta(1)))
    assert [s.probability for s in reply.scores] == [None]
    assert reply.error.code == "timeout" and reply.error.service == "verifier"
    assert model.seen == []
    await service.close()


async def test_overload_fails_open_with_an_overloaded_error():
    gate = Gate()
    service = await started(CountingModel(gate), max_queue_pairs=2)
    busy = asyncio.create_task(service.verify(request("x")))
    await gate.reached()
    queued = asyncio.create_task(service.verify(request("y", "z")))
    await wait_until(lambda: service.backend.batcher.queued == 2, what="two pairs queued")
    reply = await service.verify(request("w"))
    gate.set()
    assert reply.error.code == "overloaded" and reply.scores[0].probability is None
    assert (await busy).error is None and (await queued).error is None
    await service.close()


async def test_heuristic_answers_when_asked_and_disabled_scores_nothing():
    service = await started(provider="heuristic")
    reply = await service.verify(request("Aspirin reduced the risk of myocardial infarction by 45%."))
    assert reply.provider == "heuristic" and reply.scores[0].probability < 0.6
    assert service.health()["model_source"] == "heuristic"
    await service.close()
    off = await started(enabled=False)
    reply = await off.verify(request("anything"))
    assert reply.scores[0].probability is None and reply.error.code == "not_available"


def test_auto_provider_follows_what_is_configured(monkeypatch, tmp_path):
    assert local_torch.shipped_model_present(), "the trained model ships in the package"
    assert VerifierSettings().resolved_provider() == "local"  # the shipped model is the default
    assert VerifierSettings().uses_shipped_model()
    assert VerifierSettings(provider="heuristic").resolved_provider() == "heuristic"
    assert VerifierSettings(provider="local").checkpoint_dir() == local_torch.SHIPPED_MODEL_DIR
    assert VerifierSettings(provider="local").uses_shipped_model()
    assert VerifierSettings(model_dir=tmp_path).resolved_provider() == "local"
    assert VerifierSettings(model_dir=tmp_path).checkpoint_dir() == tmp_path
    monkeypatch.setenv("ZOCRATES_VERIFIER_REMOTE_URL", "http://127.0.0.1:8005/v1/systemone")
    assert VerifierSettings().resolved_provider() == "remote"
    monkeypatch.delenv("ZOCRATES_VERIFIER_REMOTE_URL")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-x")
    assert VerifierSettings().resolved_provider() == "openrouter"
    monkeypatch.delenv("OPENROUTER_API_KEY")
    monkeypatch.setattr(local_torch, "SHIPPED_MODEL_DIR", tmp_path / "absent")
    with pytest.raises(ValueError, match="MODEL_DIR"):
        VerifierSettings(provider="local")
    assert VerifierSettings().resolved_provider() == "local"  # the service falls back, and says so
    with pytest.raises(ValueError):
        VerifierSettings(threshold=0.4)


async def test_every_reply_carries_the_threshold_the_verifier_owns(monkeypatch):
    service = await started(CountingModel(), threshold=0.7)
    assert (await service.verify(request("a claim"))).threshold == 0.7
    assert service.health()["threshold"] == 0.7 and service.health()["threshold_source"] == "setting"
    await service.close()
    # Unset: the threshold the answering model was calibrated for, else the heuristic's default.
    calibrated = CountingModel()
    calibrated.calibrated_threshold = 0.68
    service = await started(calibrated)
    assert (await service.verify(request("a claim"))).threshold == 0.68
    assert service.health()["threshold_source"] == "calibrated"
    await service.close()
    service = await started(CountingModel())
    assert (await service.verify(request("a claim"))).threshold == SUPPORT_THRESHOLD == 0.60
    assert service.health()["threshold_source"] == "default"
    await service.close()
    monkeypatch.setenv("ZOCRATES_VERIFICATION_THRESHOLD", "0.65")  # the gateway's name before
    assert VerifierSettings().threshold == 0.65
    monkeypatch.setenv("ZOCRATES_VERIFIER_THRESHOLD", "0.75")  # the verifier's own name wins
    assert VerifierSettings().threshold == 0.75


def test_an_empty_http_port_means_bus_only(monkeypatch):
    # What the image's health check reads as "bus only", and what replicas sharing one network
    # namespace need (each would otherwise bind the same port): the service must start too.
    assert VerifierSettings().http_port == 8005
    monkeypatch.setenv("ZOCRATES_VERIFIER_HTTP_PORT", "")
    assert VerifierSettings().http_port is None
    monkeypatch.setenv("ZOCRATES_VERIFIER_HTTP_PORT", "8015")
    assert VerifierSettings().http_port == 8015


# --- HTTP -----------------------------------------------------------------------------------


def client(service: VerifierService) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=create_http_app(service)), base_url="http://verifier")


def noul(question: str = SINGLE_QUESTION) -> dict:
    return {"type": "noul", "instructions": question}


async def test_single_route_answers_in_jev_format():
    service = await started(CountingModel())
    async with client(service) as http:
        r = await http.post(
            "/v1/systemone",
            json={
                "state": {"source_text": PASSAGE, "claim": "c" * 40},
                "questions": {"supported": noul("Does the `source_text` support the `claim`?")},
            },
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["answers"] == {"supported": {"type": "noul", "noul": 0.4, "confidence": 0.6}}
    assert body["model"] == "counting" and body["usage"]["output_tokens"] == 0
    assert body["usage"]["input_tokens"] > 0
    await service.close()


async def test_batch_route_answers_states_times_questions_in_order():
    model = CountingModel()
    service = await started(model)
    states = [{"source_text": PASSAGE, "claim": "x" * n} for n in (10, 50, 90)]
    async with client(service) as http:
        r = await http.post(
            "/v1/systemone/batch",
            json={"states": states, "questions": {"single": noul(), "compound": noul(COMPOUND_QUESTION)}},
        )
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert [res["answers"]["single"]["noul"] for res in results] == [0.1, 0.5, 0.9]
    assert [res["answers"]["compound"]["noul"] for res in results] == [0.1, 0.5, 0.9]
    assert sum(p.compound for p in model.seen) == 3 and len(model.seen) == 6
    assert r.json()["total_usage"]["input_tokens"] == sum(res["usage"]["input_tokens"] for res in results)
    await service.close()


@pytest.mark.parametrize(
    "body, status, says",
    [
        ({"state": {"source_text": PASSAGE, "claim": ""}, "questions": {"q": noul()}}, 422, "claim"),
        ({"state": {"source_text": PASSAGE, "claim": "   "}, "questions": {"q": noul()}}, 422, "claim"),
        (
            {"state": {"source_text": "x" * (MAX_SOURCE_CHARS + 1), "claim": "c"}, "questions": {"q": noul()}},
            413,
            "source_text",
        ),
        ({"state": "just text", "questions": {"q": noul()}}, 422, "object"),
        (
            {
                "state": {"source_text": PASSAGE, "claim": "c"},
                "questions": {"q": {"type": "choice", "instructions": "?", "criteria": {}}},
            },
            422,
            "noul",
        ),
        (
            {"state": {"source_text": PASSAGE, "claim": "c"}, "questions": {"q": noul("Is this spam?")}},
            422,
            "answers only",
        ),
        ({"state": {"source_text": PASSAGE, "claim": "c"}}, 400, "questions"),
        ({"questions": {"q": noul()}}, 400, "state"),
        ([1, 2], 400, "object"),
    ],
)
async def test_bad_input_is_rejected_clearly(body, status, says):
    model = CountingModel()
    service = await started(model)
    async with client(service) as http:
        r = await http.post("/v1/systemone", json=body)
    assert r.status_code == status, r.text
    assert says in r.json()["detail"]
    assert model.seen == []
    await service.close()


async def test_batch_bounds_states_pairs_and_body_size():
    service = await started(CountingModel(), http_max_states=4, http_max_body_bytes=4096)
    state = {"source_text": "p", "claim": "c"}
    async with client(service) as http:
        too_many = await http.post("/v1/systemone/batch", json={"states": [state] * 5, "questions": {"q": noul()}})
        too_big = await http.post("/v1/systemone/batch", content=b"{" + b" " * 5000 + b"}")
        not_json = await http.post("/v1/systemone/batch", content=b"{nope")
        empty = await http.post("/v1/systemone/batch", json={"states": [], "questions": {"q": noul()}})
    assert too_many.status_code == 413 and "too many states" in too_many.json()["detail"]
    assert too_big.status_code == 413 and "limit" in too_big.json()["detail"]
    assert not_json.status_code == 400 and empty.status_code == 400
    await service.close()
    wide = await started(CountingModel(), http_max_states=512, http_max_questions=2)
    async with client(wide) as http:
        pairs = await http.post(
            "/v1/systemone/batch",
            json={"states": [state] * 300, "questions": {"a": noul(), "b": noul(COMPOUND_QUESTION)}},
        )
    assert pairs.status_code == 413 and "pairs" in pairs.json()["detail"]
    await wide.close()


async def test_bearer_auth_guards_every_route_but_liveness():
    service = await started(CountingModel(), http_api_key="s3cret")
    body = {"state": {"source_text": PASSAGE, "claim": "c"}, "questions": {"q": noul()}}
    async with client(service) as http:
        missing = await http.post("/v1/systemone", json=body)
        wrong = await http.post(
            "/v1/systemone/batch", json=body, headers={"Authorization": "Bearer s3cre\xe9t".encode("latin-1")}
        )
        good = await http.post("/v1/systemone", json=body, headers={"Authorization": "Bearer s3cret"})
        live = await http.get("/health")
        full = await http.get("/health", headers={"Authorization": "Bearer s3cret"})
        docs = await http.get("/openapi.json")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401 and good.status_code == 200
    assert live.json() == {"status": "ok"}
    assert {"status", "device", "loaded", "checkpoint_devices", "cpu_fallbacks", "provider", "model"} <= set(
        full.json()
    )
    assert docs.status_code == 404
    await service.close()


async def test_saturation_answers_503_with_retry_after():
    gate = Gate()
    service = await started(CountingModel(gate), http_max_concurrent=1)
    body = {"state": {"source_text": PASSAGE, "claim": "c"}, "questions": {"q": noul()}}
    async with client(service) as http:
        first = asyncio.create_task(http.post("/v1/systemone", json=body))
        await gate.reached()  # the first request holds the only slot
        refused = await http.post("/v1/systemone", json=body)
        gate.set()
        assert (await first).status_code == 200
    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
    await service.close()


async def test_queue_overload_over_http_is_503_and_a_deadline_is_504():
    gate = Gate()
    service = await started(CountingModel(gate), max_queue_pairs=1, request_timeout_s=0.2)
    body = {"state": {"source_text": PASSAGE, "claim": "c"}, "questions": {"q": noul()}}
    async with client(service) as http:
        first = asyncio.create_task(http.post("/v1/systemone", json=body))
        await gate.reached()
        second = asyncio.create_task(http.post("/v1/systemone", json=body))  # queued, expires
        await wait_until(lambda: service.backend.batcher.queued == 1, what="the second request queued")
        overloaded = await http.post("/v1/systemone", json=body)
        await asyncio.sleep(0.3)  # the queued request outlives its 0.2 s deadline: the point of the test
        gate.set()
        timed_out = await second
        await first
    assert overloaded.status_code == 503 and int(overloaded.headers["retry-after"]) >= 1
    assert timed_out.status_code == 504 and "deadline" in timed_out.json()["detail"]
    await service.close()


class DeadBackend(Backend):
    provider, model, device = "remote", "gone", "remote"

    async def score(self, pairs, deadline):
        raise ConnectionError("worker vanished")


async def test_a_dead_backend_fails_open_on_the_bus_and_500s_over_http():
    service = VerifierService(VerifierSettings(provider="heuristic"))
    service.backend, service.provider = DeadBackend(), "remote"
    reply = await service.verify(request("a", "b"))
    assert [s.probability for s in reply.scores] == [None, None]
    assert reply.error.code == "internal"
    async with client(service) as http:
        r = await http.post(
            "/v1/systemone", json={"state": {"source_text": PASSAGE, "claim": "c"}, "questions": {"q": noul()}}
        )
    assert r.status_code == 500 and "not scored" in r.json()["detail"]
