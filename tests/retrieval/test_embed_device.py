"""The embedder's device goes through the runtime's probe, the verifier's own."""

from __future__ import annotations

import pytest

from zocrates_retrieval.adapters import embed
from zocrates_retrieval.config import default_embedding_model
from zocrates_runtime import device


def test_auto_on_this_machine_resolves_through_the_shared_probe():
    import torch

    if torch.cuda.is_available():
        pytest.skip("an accelerator is present: auto would pick it")
    assert embed.resolve_device is device.resolve_device  # no copy of its own
    embedder = embed.Embedder.shared(default_embedding_model(), "auto", 32)
    assert embedder.device == "cpu" == str(next(embedder.model.parameters()).device)
    # the probe's verdict on each better candidate (the old in-process check kept none)
    assert set(embedder.device_choice.rejected) == {"cuda", "mps", "xpu"}
    assert embedder.device_choice.fallback_reason("auto") is None


def test_a_requested_accelerator_that_fails_the_probe_falls_back_with_its_reason(monkeypatch, embedder):
    calls = []

    def probe(candidates, timeout_s=60.0):
        calls.append(candidates)
        return None, {"cuda": "CUDA error: no kernel image is available"}

    monkeypatch.setattr(device, "probe", probe)
    monkeypatch.setattr("sentence_transformers.SentenceTransformer", lambda *a, **k: embedder.model)
    broken = embed.Embedder(default_embedding_model(), "cuda")
    assert calls == [["cuda"]]
    assert broken.device == "cpu"
    assert broken.device_choice.fallback_reason("cuda") == "cuda: CUDA error: no kernel image is available"
