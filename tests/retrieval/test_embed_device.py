"""The embedder's device goes through the runtime's probe, the verifier's own."""

from __future__ import annotations

import numpy as np
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


def test_auto_embeds_in_bfloat16_where_the_cpu_computes_it_and_the_vectors_match_float32():
    model = default_embedding_model()
    auto, float32 = embed.Embedder.shared(model, "cpu", 32), embed.Embedder.shared(model, "cpu", 32, "float32")
    assert auto.precision == ("bfloat16" if embed.cpu_has_bfloat16() else "float32") and float32.precision == "float32"
    bf16 = embed.Embedder.shared(model, "cpu", 32, "bfloat16")  # emulated where the CPU lacks it: slow, still right
    texts = [
        "Low molecular weight heparin is the preferred thromboprophylaxis after major trauma.",
        "Crystals of the N-domain were measured at a synchrotron beamline.",
        "Participants rated the key question index as the most useful feature.",
    ]
    want = float32.embed_documents(texts)
    got = bf16.embed_documents(texts)
    assert got.dtype == np.float32 and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-3)
    assert (got * want).sum(axis=1).min() > 0.999
    spans = [[(0, 30)], [(0, 12)], [(13, 40)]]
    dense, units = bf16.embed_with_spans(texts, spans)
    want_dense, want_units = float32.embed_with_spans(texts, spans)
    assert (dense * want_dense).sum(axis=1).min() > 0.999
    assert all((u * w).sum() > 0.999 for u, w in zip(units, want_units))


def test_bfloat16_on_an_accelerator_is_refused_with_the_setting_to_change(monkeypatch, embedder):
    monkeypatch.setattr(embed, "resolve_device", lambda requested: device.DeviceChoice("cuda", {}))
    monkeypatch.setattr("sentence_transformers.SentenceTransformer", lambda *a, **k: embedder.model)
    with pytest.raises(RuntimeError, match="ZOCRATES_RETRIEVAL_EMBEDDING_PRECISION"):
        embed.Embedder(default_embedding_model(), "cuda", 32, "bfloat16")
