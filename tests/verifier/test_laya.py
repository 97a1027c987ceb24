"""The Laya paths, for real: a tiny checkpoint written by `laya.train.save_checkpoint`, loaded
through our loader (bus, HTTP) and served by Laya's own `laya-serve` to our remote backend.

Skipped only when the `laya` package is not importable (it is in requirements-dev.txt).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import httpx
import pytest

from zocrates_contracts import VerificationPair, VerificationRequested
from zocrates_runtime import bus
from zocrates_runtime.natsserver import free_port
from zocrates_runtime.settings import ZocratesSettings
from zocrates_verifier.adapters.backends.base import COMPOUND_QUESTION, SINGLE_QUESTION, Pair
from zocrates_verifier.adapters.backends.local_torch import LayaModel, load_model
from zocrates_verifier.app import create_app
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.http import create_http_app
from zocrates_verifier.service import VerifierService

laya = pytest.importorskip("laya")

PASSAGE = "Over five years, aspirin reduced the risk of myocardial infarction by 32% in adults."
PAIRS = [
    Pair("Aspirin reduced the risk of infarction by 32%.", PASSAGE),
    Pair("Aspirin cut infarction risk; statins lowered cholesterol in most adults", PASSAGE, compound=True),
    Pair("Statins lowered cholesterol.", "Cholesterol fell in the statin arm " * 8),
    Pair("A claim about mice.", "Mice were dosed daily for two weeks."),
]


def laya_direct(checkpoint, pairs: list[Pair]) -> list[float]:
    """What the laya package itself answers, one state per call: the reference."""
    agent = laya.load(str(checkpoint), device="cpu")
    out = []
    for pair in pairs:
        questions = {"q": {"type": "noul", "instructions": pair.question}}
        state = {"source_text": pair.source_text, "claim": pair.claim}
        out.append(agent.predict_batch([state], questions)[0]["answers"]["q"]["noul"])
    return out


@pytest.fixture(scope="module")
def reference(tiny_laya_checkpoint) -> list[float]:
    return laya_direct(tiny_laya_checkpoint, PAIRS)


def test_loader_serves_a_laya_checkpoint_offline_and_asks_each_pair_its_question(
    tiny_laya_checkpoint, reference, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a Hub lookup would fail, not hang
    model = load_model(tiny_laya_checkpoint)
    assert isinstance(model, LayaModel)
    model.setup("cpu")
    assert model.device == "cpu" and model.max_seq_len == 256  # the checkpoint's window
    got = model.predict(PAIRS)  # mixed single and compound in one batch, order kept
    assert got == pytest.approx(reference, abs=2e-4)
    assert len({round(p, 4) for p in got}) == len(got), "the pairs must be told apart"
    # The compound pair is asked the compound question: the single one answers differently.
    single = model.predict([Pair(PAIRS[1].claim, PAIRS[1].source_text, compound=False)])[0]
    assert abs(single - got[1]) > 0.01
    assert model.describe()["dtype"] == "float32"


async def test_service_reports_laya_and_scores_through_the_micro_batcher(tiny_laya_checkpoint, reference):
    service = VerifierService(VerifierSettings(provider="local", model_dir=tiny_laya_checkpoint, device="cpu"))
    await service.start()
    try:
        # Concurrent requests share forward passes; each gets its own scores back, in order.
        results = await asyncio.gather(*(service.score([PAIRS[i], PAIRS[(i + 1) % 4]], None) for i in range(4)))
        for i, outcomes in enumerate(results):
            assert outcomes == pytest.approx([reference[i], reference[(i + 1) % 4]], abs=2e-4)
        health = service.health()
        assert health["model"] == f"laya:{tiny_laya_checkpoint.name}"
        assert health["checkpoint_devices"] == {health["model"]: "cpu"}
        assert health["laya_device"] == "cpu" and health["batches"] >= 1
    finally:
        await service.close()


async def test_our_http_batch_route_answers_with_the_laya_checkpoint(tiny_laya_checkpoint, reference):
    service = VerifierService(VerifierSettings(provider="local", model_dir=tiny_laya_checkpoint, device="cpu"))
    await service.start()
    try:
        transport = httpx.ASGITransport(app=create_http_app(service))
        async with httpx.AsyncClient(transport=transport, base_url="http://verifier") as client:
            r = await client.post(
                "/v1/systemone/batch",
                json={
                    "states": [{"claim": p.claim, "source_text": p.source_text} for p in PAIRS],
                    "questions": {
                        "single": {"type": "noul", "instructions": SINGLE_QUESTION},
                        "compound": {"type": "noul", "instructions": COMPOUND_QUESTION},
                    },
                },
            )
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        expected_single = laya_direct(tiny_laya_checkpoint, [Pair(p.claim, p.source_text) for p in PAIRS])
        expected_compound = laya_direct(tiny_laya_checkpoint, [Pair(p.claim, p.source_text, True) for p in PAIRS])
        assert [x["answers"]["single"]["noul"] for x in results] == pytest.approx(expected_single, abs=2e-4)
        assert [x["answers"]["compound"]["noul"] for x in results] == pytest.approx(expected_compound, abs=2e-4)
    finally:
        await service.close()


@pytest.mark.connected
async def test_a_turn_on_the_bus_is_scored_by_the_laya_checkpoint(nats_server, tiny_laya_checkpoint, reference):
    settings = ZocratesSettings(nats_url=nats_server.url)
    service = VerifierService(VerifierSettings(provider="local", model_dir=tiny_laya_checkpoint, device="cpu"))
    app = create_app(settings, service=service)
    gateway = bus.make_broker(settings)
    requester = bus.Requester(gateway, "gw")
    await gateway.start()
    await bus.ensure_streams(gateway)
    await app.start()
    try:
        request = VerificationRequested(
            turn_id="t1",
            session_id="s",
            user_id="u",
            reply_to=requester.reply_to(VerificationRequested),
            pairs=[
                VerificationPair(
                    chunk_index=i + 1, occurrence=1, claim=p.claim, source_text=p.source_text, compound=p.compound
                )
                for i, p in enumerate(PAIRS)
            ],
        )
        reply = await requester.request(request, timeout=30)
        assert reply.error is None and reply.provider == "local" and reply.device == "cpu"
        assert reply.model == f"laya:{tiny_laya_checkpoint.name}"
        assert [s.probability for s in reply.scores] == pytest.approx(reference, abs=2e-4)
    finally:
        await app.stop()
        await gateway.stop()


@pytest.fixture
def laya_serve(tiny_laya_checkpoint, tmp_path):
    """Laya's own `laya-serve` process on loopback, serving the tiny checkpoint as `tiny`."""
    port = free_port()
    env = {
        **os.environ,
        "LAYA_HOST": "127.0.0.1",
        "LAYA_PORT": str(port),
        "LAYA_EXTRA_MODELS": f'{{"tiny": "{tiny_laya_checkpoint}"}}',
        "LAYA_MODELS": "tiny",
        "LAYA_DEFAULT_MODEL": "tiny",
        "LAYA_API_KEY": "laya-secret",
        "LAYA_DEVICE": "cpu",
        "LAYA_LOG_LEVEL": "warning",
        "HF_HUB_OFFLINE": "1",
    }
    log = (tmp_path / "laya-serve.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "laya.serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert process.poll() is None, (tmp_path / "laya-serve.log").read_text()
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "laya-serve did not come up in 90 s"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.mark.slow
async def test_remote_backend_talks_to_the_real_laya_serve(laya_serve, reference):
    """The wire-format check: our `/v1/systemone/batch` client against Laya's own server."""
    service = VerifierService(
        VerifierSettings(
            provider="remote",
            remote_url=f"{laya_serve}/v1/systemone",
            model="tiny",
            remote_api_key="laya-secret",
            request_timeout_s=30,
        )
    )
    await service.start()
    try:
        health = service.health()
        assert health["loaded"] == ["tiny"] and health["remote_device"] == "cpu"
        outcomes = await service.score(PAIRS, None)  # single and compound: two round trips
        assert outcomes == pytest.approx(reference, abs=2e-4)
    finally:
        await service.close()
    # A wrong key is laya-serve's 401, which fails open rather than raising.
    wrong = VerifierService(
        VerifierSettings(
            provider="remote", model="tiny", remote_url=f"{laya_serve}/v1/systemone", remote_api_key="wrong"
        )
    )
    await wrong.start()
    try:
        outcomes = await wrong.score(PAIRS[:1], None)
        assert outcomes[0].code == "unreachable" and "401" in str(outcomes[0])
    finally:
        await wrong.close()
