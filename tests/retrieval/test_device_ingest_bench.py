"""bench/device_ingest.py: its workload is what the `Ingestor` embeds, and its device run
computes what `Embedder.embed_with_spans` computes (run here on CPU, in-process)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from bench import device_ingest


def _spans(rows):
    return [[tuple(s) for s in row] for row in rows]


def test_prepare_captures_the_ingest_and_run_matches_the_embedder(tmp_path, pdf_dir):
    from zocrates_retrieval.adapters.embed import Embedder
    from zocrates_retrieval.config import default_embedding_model

    embedder = Embedder.shared(default_embedding_model(), "cpu", 32, "float32")  # as an accelerator runs it
    bundle = tmp_path / "bundle"
    summary = device_ingest.prepare(bundle, [pdf_dir / "cermine" / "test1.pdf"], embedder)
    workload = json.loads((bundle / "workload.json").read_text())
    texts, spans = workload["texts"], _spans(workload["spans"])
    assert summary["pages"] == workload["pages"] == 4 and summary["files"] == 1
    assert summary["chunks"] == len(texts) == len(spans) > 0 and summary["units"] == sum(map(len, spans)) > 0
    assert all(0 <= a < b <= len(t) for t, row in zip(texts, spans) for a, b in row)
    assert workload["here"]["convert_pages_per_s"] > 0 and workload["here"]["cpu_embed_chunks_per_s"] > 0
    assert summary["bundle_mb"] < device_ingest.MAX_BUNDLE_MB
    assert (bundle / "model" / "model.safetensors").stat().st_size < 50 * 2**20  # float16 weights
    assert embedder.embed_with_spans.__func__ is type(embedder).embed_with_spans  # the wrapper is gone

    # the same arithmetic as the Embedder, on the original float32 weights; plus a span past the
    # model's input length, which is embedded on its own
    long_text = "Heparin raised bleeding in trauma patients. " * 60
    texts, spans = texts + [long_text], spans + [[(0, 44), (len(long_text) - 44, len(long_text))]]
    encoder = device_ingest.Encoder(Path(embedder.name), "cpu", "float32", embedder.max_tokens)
    dense, units = encoder.embed_with_spans(texts, spans, 3)
    want_dense, want_units = embedder.embed_with_spans(texts, spans)
    assert np.allclose(dense, want_dense, atol=1e-4)
    assert [u.shape for u in units] == [u.shape for u in want_units]
    assert all(np.allclose(u, w, atol=1e-4) for u, w in zip(units, want_units))

    result = device_ingest.measure(bundle, "cpu", ["float16", "float32"], [1, 2], rounds=1, limit=2)
    text = device_ingest.report(result, "cpu", {}, None, 1)
    rows = [line for line in text.splitlines() if re.match(r"\| (float|reference)", line)]
    assert [r.split(" | ")[:2] for r in rows] == [
        ["| reference: CPU `Embedder` where prepared (float32)", "32"],
        ["| float16", "1"],
        ["| float16", "2"],
        ["| float32", "1"],
        ["| float32", "2"],
        ["| float16 vs float32", "2"],
        ["| float16 vs the CPU Embedder", "2"],
        ["| float32 vs the CPU Embedder", "2"],
    ]
    # the bundle's float16 weights, computed in float32, stay next to the original model
    assert result["agreement"]["float32 vs the CPU Embedder"]["unit_min"] > 0.999
    assert "full text of 5,000 items" in text and "Device: `cpu`" in text
