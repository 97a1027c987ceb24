"""The trained model that ships in the package (opt-in: provider=local) tells support from
contradiction, keeps a sentence quoted from its own passage, and gives way to the heuristic (saying so on
/health) when it is absent or does not load."""

from __future__ import annotations

import httpx
import pytest

from zocrates_contracts import SUPPORT_THRESHOLD
from zocrates_verifier.adapters.backends import local_torch
from zocrates_verifier.adapters.backends.base import Pair
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.http import create_http_app
from zocrates_verifier.service import VerifierService

PASSAGE = (
    "In a randomised trial of 400 adults, daily aspirin lowered the risk of a first stroke by a third over five years."
)
SUPPORTED = [
    Pair("Daily aspirin lowers the risk of stroke.", PASSAGE),
    Pair("A man is playing a guitar.", "A man in a red shirt plays a guitar on stage."),
]
CONTRADICTED = [
    Pair("Daily aspirin had no effect on the risk of stroke.", PASSAGE),
    Pair("Nobody is playing an instrument.", "A man in a red shirt plays a guitar on stage."),
]
#: A negation on the passage's side: v1 read it as support (0.75), v2 (contrastive pairs) does not.
PASSAGE_NEGATION = Pair(
    "Metformin reduces HbA1c levels.",
    "Metformin did not reduce HbA1c levels compared with placebo in the 120 patients studied.",
)
#: A contradiction the shipped model misses (docs/verifier-model.md, "Known failures"): a reversed
#: direction of effect.
MISSED = [Pair("Daily aspirin raises the risk of stroke.", PASSAGE)]


@pytest.fixture(scope="module")
def shipped():
    assert local_torch.shipped_model_present(), (
        f"no trained model at {local_torch.SHIPPED_MODEL_DIR}: it ships with the repository "
        "(python -m tools.train_verifier --ship ...)"
    )
    model = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR)
    model.setup("cpu")
    return model


def three_way(pairs):
    """softmax over (support, contradict, neither) straight from the shipped checkpoint."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = local_torch.SHIPPED_MODEL_DIR
    net = AutoModelForSequenceClassification.from_pretrained(path, dtype=torch.float32).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert [net.config.id2label[i] for i in range(3)] == ["support", "contradict", "neither"]
    enc = tokenizer([p.source_text for p in pairs], [p.claim for p in pairs], padding=True, return_tensors="pt")
    with torch.inference_mode():
        return torch.softmax(net(**enc).logits, -1).tolist()


def test_shipped_model_is_small_half_precision_safetensors():
    weights = local_torch.SHIPPED_MODEL_DIR / "model.safetensors"
    assert weights.stat().st_size <= 50 * 1024 * 1024
    from safetensors import safe_open

    with safe_open(weights, "pt") as f:
        assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {"torch.float16"}


def test_shipped_model_tells_support_from_contradiction(shipped):
    support, contradict = SUPPORTED, CONTRADICTED
    for (s, c, _), (s2, c2, _) in zip(three_way(support), three_way(contradict)):
        assert s > c, "a supported claim: support above contradict"
        assert c2 > s2, "a contradicted claim: contradict above support"
    p_support = shipped.predict(support)
    p_contradict = shipped.predict(contradict)
    assert min(p_support) >= SUPPORT_THRESHOLD > max(p_contradict), (p_support, p_contradict)
    assert calibrated_threshold() > max(p_contradict), p_contradict


@pytest.mark.xfail(
    strict=True,
    reason="issue 16: v2 keeps fewer supported claims at its calibrated threshold (0.73); a paraphrase "
    "of the passage scores about 0.70 (docs/verifier-model.md, \"Known failures\")",
)
def test_a_paraphrase_of_the_passage_clears_the_calibrated_threshold(shipped):
    assert min(shipped.predict(SUPPORTED)) >= calibrated_threshold()


def calibrated_threshold() -> float:
    import json

    config = json.loads((local_torch.SHIPPED_MODEL_DIR / "config.json").read_text())
    return config["zocrates_verifier"]["threshold"]


def test_shipped_model_catches_a_negation_on_the_passage_side(shipped):
    assert shipped.predict([PASSAGE_NEGATION])[0] < SUPPORT_THRESHOLD


@pytest.mark.xfail(
    strict=True,
    reason="issue 16: the shipped model reads a reversed direction of effect as support; a model "
    "that fixes it should drop this mark",
)
def test_shipped_model_catches_a_reversed_direction(shipped):
    assert max(shipped.predict(MISSED)) < calibrated_threshold()


def test_int8_and_bfloat16_scores_stay_close_to_float32():
    def scores(dtype: str) -> list[float]:
        model = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype=dtype)
        model.setup("cpu")
        assert model.describe()["dtype"] == dtype
        return model.predict(SUPPORTED + CONTRADICTED)

    exact = scores("float32")
    assert scores("int8") == pytest.approx(exact, abs=0.1)
    assert scores("bfloat16") == pytest.approx(exact, abs=0.05)
    with pytest.raises(ValueError, match="CPU only"):
        local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype="int8").setup("cuda")


@pytest.fixture
def two_threads():
    """The model's threads as `cpu_threads=2` sets them before it loads."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_openvino_runs_the_model_on_the_cpu_with_torchs_scores(dtype, two_threads):
    """`runtime=auto` converts the checkpoint to OpenVINO on the CPU given two threads (1.3-1.4x
    torch's pairs/s); it scores as torch does in the same precision, from several threads at once."""
    from concurrent.futures import ThreadPoolExecutor

    def loaded(runtime: str):
        model = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype=dtype, runtime=runtime)
        model.setup("cpu")
        return model

    torch_model, openvino_model = loaded("torch"), loaded("auto")
    assert (torch_model.describe()["runtime"], openvino_model.describe()["runtime"]) == ("torch", "openvino")
    assert openvino_model.describe()["dtype"] == dtype
    pairs = SUPPORTED + CONTRADICTED + [PASSAGE_NEGATION]
    want = torch_model.predict(pairs)
    # bfloat16 rounds differently in each (or not at all, on a CPU without it)
    close = 0.05 if dtype == "bfloat16" else 0.005
    assert openvino_model.predict(pairs) == pytest.approx(want, abs=close)
    with ThreadPoolExecutor(3) as pool:  # one inference request per thread
        for got in pool.map(lambda _: openvino_model.predict(pairs), range(6)):
            assert got == pytest.approx(want, abs=close)


def test_auto_keeps_torch_for_a_model_with_one_thread():
    """One thread, the default beside the other services: bfloat16 gained 8 % for 170 MB more."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype="float32")
        model.setup("cpu")
        assert model.describe()["runtime"] == "torch"
    finally:
        torch.set_num_threads(before)


def test_a_model_openvino_cannot_convert_stays_in_torch_unless_openvino_was_asked_for(monkeypatch, caplog, two_threads):
    def broken(net, tokenizer, dtype):
        raise RuntimeError("Check 'is_conversion_successful' failed: unsupported operation")

    monkeypatch.setattr(local_torch, "_openvino_classifier", broken)
    model = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype="float32")
    with caplog.at_level("WARNING", logger=local_torch.__name__):
        model.setup("cpu")
    assert model.describe()["runtime"] == "torch" and "unsupported operation" in caplog.text
    assert model.predict(SUPPORTED[:1])[0] > 0.5
    with pytest.raises(RuntimeError, match="unsupported operation"):
        local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, runtime="openvino").setup("cpu")


def test_runtime_openvino_is_refused_where_it_does_not_run_with_the_setting_to_change():
    for dtype, device in (("int8", "cpu"), ("float16", "cpu"), ("float32", "cuda")):
        model = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype=dtype, runtime="openvino")
        with pytest.raises(ValueError, match="ZOCRATES_VERIFIER_RUNTIME"):
            model._runs_openvino(device, dtype)
    int8 = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, dtype="int8")
    int8.setup("cpu")
    assert int8.describe()["runtime"] == "torch"  # torch's dynamic quantisation, as asked


async def health_over_http(service: VerifierService) -> dict:
    transport = httpx.ASGITransport(app=create_http_app(service))
    async with httpx.AsyncClient(transport=transport, base_url="http://verifier") as http:
        return (await http.get("/health")).json()


async def test_provider_local_answers_with_the_trained_model_and_health_names_it():
    service = VerifierService(VerifierSettings(provider="local", device="cpu"))
    await service.start()
    try:
        outcomes = await service.score(SUPPORTED[:1] + CONTRADICTED[:1], None)
        assert outcomes[0] > outcomes[1]
        health = await health_over_http(service)
        assert health["provider"] == "local" and health["model_source"] == "trained"
        assert health["model"] == local_torch.checkpoint_name(local_torch.SHIPPED_MODEL_DIR)
        assert health["model"] == "zocrates-verifier-minilm-v2"
        assert health["loaded"] == [health["model"]] and health["fallback_reason"] is None
        # the threshold it was calibrated for, read through windows as it serves
        assert health["threshold"] == calibrated_threshold() and health["threshold_source"] == "calibrated"
    finally:
        await service.close()


async def test_the_trained_model_is_the_default_and_the_heuristic_answers_without_its_weights(monkeypatch, tmp_path):
    service = VerifierService(VerifierSettings(device="cpu"))
    await service.start()
    try:
        health = await health_over_http(service)
        assert health["provider"] == "local" and health["model"] == "zocrates-verifier-minilm-v2"
        assert health["model_source"] == "trained" and health["fallback_reason"] is None
        assert service.backend._cpu_threads == 1  # one torch thread on a CPU shared with the others
    finally:
        await service.close()
    heuristic = VerifierService(VerifierSettings(provider="heuristic"))
    await heuristic.start()
    try:
        health = await health_over_http(heuristic)
        assert health["provider"] == "heuristic" and health["model_source"] == "heuristic"
        assert health["fallback_reason"] is None and heuristic.backend._cpu_threads == 0  # no torch
    finally:
        await heuristic.close()
    monkeypatch.setattr(local_torch, "SHIPPED_MODEL_DIR", tmp_path / "absent")
    with pytest.raises(ValueError, match=str(tmp_path / "absent")):
        VerifierSettings(provider="local")
    fallback = VerifierService(VerifierSettings(device="cpu"))
    await fallback.start()
    try:
        health = await health_over_http(fallback)
        assert health["provider"] == "heuristic" and health["model_source"] == "heuristic-fallback"
        assert health["fallback_reason"] == f"the trained model is not at {tmp_path / 'absent'}"
        assert isinstance((await fallback.score(SUPPORTED[:1], None))[0], float)
    finally:
        await fallback.close()


async def test_heuristic_answers_when_the_shipped_weights_fail_to_load(monkeypatch, tmp_path):
    broken = tmp_path / "model"
    broken.mkdir()
    for path in local_torch.SHIPPED_MODEL_DIR.glob("*.json"):
        (broken / path.name).write_text(path.read_text())
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    monkeypatch.setattr(local_torch, "SHIPPED_MODEL_DIR", broken)
    service = VerifierService(VerifierSettings(provider="local", device="cpu"))
    assert service.provider == "local"
    await service.start()
    try:
        health = service.health()
        assert health["provider"] == "heuristic" and health["model_source"] == "heuristic-fallback"
        assert "failed to load" in health["fallback_reason"]
        assert isinstance((await service.score(SUPPORTED[:1], None))[0], float)
    finally:
        await service.close()


async def test_a_configured_checkpoint_that_does_not_load_is_not_hidden(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    service = VerifierService(VerifierSettings(model_dir=tmp_path, device="cpu"))
    with pytest.raises(Exception):  # noqa: B017 -- whatever the loader raises, it surfaces
        await service.start()
    assert service.backend is None


#: A passage as retrieval sends one: several sentences of a methods section, one of them quoted.
METHODS = (
    "Patients were recruited from three hospitals between 2015 and 2018. "
    "Venous thrombosis was diagnosed by compression ultrasonography of both legs. "
    "Prophylaxis with low-molecular-weight heparin was started within 24 hours of admission. "
    "Bleeding events were recorded by two reviewers blinded to the treatment."
)
OTHER = (
    "The hospital study assessed the quality of care with a structured questionnaire. "
    "Nurses and physicians answered it at the end of each shift. "
    "Response rates were above ninety percent in all wards."
)


def test_the_model_itself_keeps_a_sentence_quoted_from_a_longer_passage(shipped):
    """Regression for the verbatim-quote failure (docs/verifier-model.md): read whole, a quoted
    sentence of a longer passage looked like "neither" to the model."""
    plain = local_torch.load_model(local_torch.SHIPPED_MODEL_DIR, verbatim_rule=False)
    plain.setup("cpu")
    quote = "Venous thrombosis was diagnosed by compression ultrasonography of both legs."
    kept, elsewhere = plain.predict([Pair(quote, METHODS), Pair(quote, OTHER)])
    assert kept >= calibrated_threshold() > elsewhere
    assert shipped.predict([Pair(quote, METHODS)]) == [local_torch.VERBATIM_SUPPORT]


def test_the_model_says_which_sentence_of_the_passage_supports_the_claim(shipped):
    claim = "Ultrasonography of both legs was used to diagnose venous thrombosis."
    [support] = shipped.predict([Pair(claim, METHODS)])
    [(start, end)] = support.spans
    assert METHODS[start:end] == "Venous thrombosis was diagnosed by compression ultrasonography of both legs."
