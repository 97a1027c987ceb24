"""The embedder's device goes through the runtime's probe, the verifier's own."""

from __future__ import annotations

import hashlib
import json
import threading
from concurrent.futures import ThreadPoolExecutor

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


TEXTS = [
    "Low molecular weight heparin is the preferred thromboprophylaxis after major trauma.",
    "Crystals of the N-domain were measured at a synchrotron beamline.",
    "Participants rated the key question index as the most useful feature.",
]
SPANS = [[(0, 30)], [(0, 12)], [(13, 40)]]


@pytest.mark.parametrize(("precision", "closeness"), [("bfloat16", 0.999), ("int8", 0.99)])
def test_each_cpu_precision_embeds_texts_and_spans_close_to_float32(precision, closeness):
    """bfloat16 is emulated where the CPU lacks it, int8 without int8 dot products: slow, still right."""
    model = default_embedding_model()
    float32, other = (
        embed.Embedder.shared(model, "cpu", 32, "float32"),
        embed.Embedder.shared(model, "cpu", 32, precision),
    )
    assert (float32.precision, other.precision) == ("float32", precision)
    want = float32.embed_documents(TEXTS)
    got = other.embed_documents(TEXTS)
    assert got.dtype == np.float32 and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-3)
    assert (got * want).sum(axis=1).min() > closeness
    dense, units = other.embed_with_spans(TEXTS, SPANS)
    want_dense, want_units = float32.embed_with_spans(TEXTS, SPANS)
    assert (dense * want_dense).sum(axis=1).min() > closeness
    assert all((u * w).sum() > closeness for u, w in zip(units, want_units))
    assert np.allclose(dense, got, atol=1e-5)  # a text's vector is the same with spans or without


def test_auto_embeds_in_int8_with_int8_dot_products_else_in_bfloat16_where_the_cpu_computes_it():
    model = default_embedding_model()
    assert embed.int8_copy_of(model) == embed.INT8_DIR  # the shipped copy was made from these weights
    int8 = embed.cpu_has_int8_dot() and not embed.cpu_has_amx()
    want = "int8" if int8 else "bfloat16" if embed.cpu_has_bfloat16() else "float32"
    assert embed.Embedder.shared(model, "cpu", 32).precision == want


@pytest.mark.parametrize("amx", [True, False])
def test_auto_keeps_bfloat16_on_a_cpu_with_amx_where_int8_gains_nothing(monkeypatch, embedder, amx):
    """On AMX the int8 copy embedded no faster than bfloat16 and moved a table out of the
    passages a question retrieves (docs/architecture.md); with VNNI alone it is 1.5x as fast."""
    monkeypatch.setattr(embed, "cpu_has_int8_dot", lambda: True)
    monkeypatch.setattr(embed, "cpu_has_amx", lambda: amx)
    monkeypatch.setattr(embed, "cpu_has_bfloat16", lambda: True)
    monkeypatch.setattr("sentence_transformers.SentenceTransformer", lambda *a, **k: embedder.model)
    assert embed.Embedder(default_embedding_model(), "cpu").precision == ("bfloat16" if amx else "int8")


def test_the_int8_copy_stands_in_only_for_the_weights_it_was_made_from(monkeypatch, embedder, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"other weights")
    assert embed.int8_copy_of(str(tmp_path)) is None
    monkeypatch.setattr("sentence_transformers.SentenceTransformer", lambda *a, **k: embedder.model)
    assert embed.Embedder(str(tmp_path), "cpu").precision in ("bfloat16", "float32")
    with pytest.raises(RuntimeError, match="no int8 copy .*ZOCRATES_RETRIEVAL_EMBEDDING_PRECISION"):
        embed.Embedder(str(tmp_path), "cpu", 32, "int8")


def test_an_int8_model_that_will_not_load_leaves_auto_embedding_in_torch(monkeypatch, embedder, caplog):
    """A speed-up, not a requirement: on a CPU where OpenVINO fails, retrieval still starts."""

    def broken(model):
        raise RuntimeError("Exception from src/inference/src/cpp/core.cpp: unsupported ISA")

    monkeypatch.setattr(embed, "_load_int8", broken)
    monkeypatch.setattr(embed, "cpu_has_int8_dot", lambda: True)
    monkeypatch.setattr(embed, "cpu_has_amx", lambda: False)
    monkeypatch.setattr("sentence_transformers.SentenceTransformer", lambda *a, **k: embedder.model)
    model = default_embedding_model()
    with caplog.at_level("WARNING", logger=embed.__name__):
        chosen = embed.Embedder(model, "cpu")
    assert chosen.precision == ("bfloat16" if embed.cpu_has_bfloat16() else "float32")
    assert chosen.int8_failure == "RuntimeError: Exception from src/inference/src/cpp/core.cpp: unsupported ISA"
    assert "unsupported ISA" in caplog.text
    assert chosen.embed_documents(TEXTS[:1]).shape == (1, chosen.dim)
    with pytest.raises(RuntimeError, match="unsupported ISA"):  # asked for by name: no quiet substitute
        embed.Embedder(model, "cpu", 32, "int8")


def test_the_shipped_int8_copy_is_whole():
    source = json.loads((embed.INT8_DIR / "source.json").read_text())
    for name, digest in source["files_sha256"].items():
        assert hashlib.sha256((embed.INT8_DIR / name).read_bytes()).hexdigest() == digest, name


def test_int8_embeds_from_several_threads_at_once():
    """A search embeds its query while ingest embeds a file's chunks: one inference request
    each (a shared one refused the second: "Infer Request is busy")."""
    int8 = embed.Embedder.shared(default_embedding_model(), "cpu", 32, "int8")
    texts = [f"{t} (paragraph {i})" for i in range(48) for t in TEXTS]
    want = int8.embed_documents(texts[:3])
    start = threading.Barrier(4)

    def embed_many(_):
        start.wait()
        return [int8.embed_documents(texts)[:3] for _ in range(3)]

    with ThreadPoolExecutor(4) as pool:
        results = [v for vectors in pool.map(embed_many, range(4)) for v in vectors]
    assert all((v * want).sum(axis=1).min() > 0.99 for v in results)


def test_bfloat16_on_an_accelerator_is_refused_with_the_setting_to_change(monkeypatch, embedder):
    monkeypatch.setattr(embed, "resolve_device", lambda requested: device.DeviceChoice("cuda", {}))
    monkeypatch.setattr("sentence_transformers.SentenceTransformer", lambda *a, **k: embedder.model)
    with pytest.raises(RuntimeError, match="ZOCRATES_RETRIEVAL_EMBEDDING_PRECISION"):
        embed.Embedder(default_embedding_model(), "cuda", 32, "bfloat16")
