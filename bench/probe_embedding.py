"""Which embedding runtime should ingest use? Throughput and retrieval quality of the options.

Ingest's bottleneck is the dense embedding (docs/benchmarks.md, Retrieval). This probe embeds
the same SciFact abstracts with each option and reports documents per second on this machine
and dense nDCG@10 / Recall@50 on a sub-corpus (every abstract some claim is judged relevant to,
plus seeded distractors up to `--docs`), with the mean cosine of each option's vectors to
today's:

- `torch-fp32`: today's path (sentence-transformers, float32).
- `torch-bf16`: the same weights run in bfloat16 (autocast on CPU).
- `onnx-fp32`, `onnx-int8`: the transformer exported to ONNX and run by ONNX Runtime, the
  second dynamically quantised to int8 weights (mean pooling and normalisation done here, as
  sentence-transformers does for this model).
- `static`: a static embedding model distilled from the same MiniLM with model2vec (each
  vocabulary token's output vector, PCA to 256 dimensions; no download): a lookup and a mean.

Run: `.venv/bin/python -m bench.probe_embedding [--docs 1500] [--threads 2]`. It prints a
markdown table; nothing is written to the project.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.bench_retrieval import _doc_text, load_scifact, ndcg_at, recall_at

BATCH = 32


def _model_dir() -> str:
    from zocrates_retrieval.config import default_embedding_model

    return default_embedding_model()


def sub_corpus(n_docs: int, seed: int = 0):
    """(doc ids, texts, queries {id: text}, qrels): the judged abstracts plus distractors."""
    docs, queries, qrels = load_scifact()
    judged = {d for rel in qrels.values() for d in rel}
    chosen = [d for d in docs if d["_id"] in judged]
    rest = [d for d in docs if d["_id"] not in judged]
    random.Random(seed).shuffle(rest)
    chosen += rest[: max(0, n_docs - len(chosen))]
    qs = {q: queries[q] for q in qrels if q in queries}
    return [d["_id"] for d in chosen], [_doc_text(d) for d in chosen], qs, qrels


def _normalise(x: np.ndarray) -> np.ndarray:
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)).astype(np.float32)


def torch_encoder(dtype: str, threads: int):
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(threads)
    model = SentenceTransformer(_model_dir(), device="cpu", local_files_only=True)

    def encode(texts):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == "bf16"):
            return model.encode(texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False)

    return encode


def onnx_encoder(quantised: bool, threads: int, folder: Path):
    import onnxruntime
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    path = folder / "model.onnx"
    tokenizer = AutoTokenizer.from_pretrained(_model_dir())
    if not path.exists():
        net = AutoModel.from_pretrained(_model_dir(), dtype=torch.float32).eval()
        names = ["input_ids", "attention_mask", "token_type_ids"]
        example = tokenizer(["a passage", "another"], return_tensors="pt", padding=True)
        torch.onnx.export(
            net,
            tuple(example[k] for k in names),
            path,
            input_names=names,
            output_names=["token_embeddings"],
            dynamic_axes={k: {0: "batch", 1: "tokens"} for k in [*names, "token_embeddings"]},
            opset_version=17,
            dynamo=False,
        )
    run_path = path
    if quantised:
        run_path = folder / "model.int8.onnx"
        if not run_path.exists():
            quantize_dynamic(path, run_path, weight_type=QuantType.QInt8)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = onnxruntime.InferenceSession(str(run_path), options, providers=["CPUExecutionProvider"])

    def encode(texts):
        out = []
        for i in range(0, len(texts), BATCH):
            enc = tokenizer(texts[i : i + BATCH], padding=True, truncation=True, max_length=256, return_tensors="np")
            feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
            tokens = session.run(None, feed)[0]
            mask = enc["attention_mask"][..., None].astype(np.float32)
            out.append((tokens * mask).sum(1) / np.maximum(mask.sum(1), 1e-9))
        return _normalise(np.concatenate(out))

    return encode


def static_encoder(folder: Path):
    from model2vec import StaticModel
    from model2vec.distill import distill

    path = folder / "static"
    if not path.exists():
        started = time.perf_counter()
        distill(model_name=_model_dir(), pca_dims=256).save_pretrained(str(path))
        print(f"static model distilled in {time.perf_counter() - started:.0f} s")
    model = StaticModel.from_pretrained(str(path))

    def encode(texts):
        return _normalise(np.asarray(model.encode(texts, batch_size=1024)))

    return encode


def evaluate(encode, ids, texts, queries, qrels) -> dict:
    encode(texts[:BATCH])  # warm-up: first-call allocations are not throughput
    started = time.perf_counter()
    doc_vectors = np.asarray(encode(texts), dtype=np.float32)
    docs_per_s = len(texts) / (time.perf_counter() - started)
    qids = list(queries)
    query_vectors = np.asarray(encode([queries[q] for q in qids]), dtype=np.float32)
    ranked = np.argsort(-(query_vectors @ doc_vectors.T), axis=1)[:, :50]
    ndcg = [ndcg_at([ids[j] for j in row], qrels[q]) for q, row in zip(qids, ranked, strict=True)]
    recall = [recall_at([ids[j] for j in row], qrels[q]) for q, row in zip(qids, ranked, strict=True)]
    return {
        "docs_per_s": docs_per_s,
        "ndcg": float(np.mean(ndcg)),
        "recall": float(np.mean(recall)),
        "vectors": doc_vectors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--options", default="torch-fp32,torch-bf16,onnx-fp32,onnx-int8,static")
    args = parser.parse_args()
    ids, texts, queries, qrels = sub_corpus(args.docs)
    print(f"{len(texts)} abstracts, {len(queries)} claims, {args.threads} threads")
    folder = Path(tempfile.mkdtemp(prefix="embedding-options-"))
    builders = {
        "torch-fp32": lambda: torch_encoder("fp32", args.threads),
        "torch-bf16": lambda: torch_encoder("bf16", args.threads),
        "onnx-fp32": lambda: onnx_encoder(False, args.threads, folder),
        "onnx-int8": lambda: onnx_encoder(True, args.threads, folder),
        "static": lambda: static_encoder(folder),
    }
    rows, reference = [], None
    for name in args.options.split(","):
        result = evaluate(builders[name](), ids, texts, queries, qrels)
        if reference is None:
            reference = result["vectors"]
        agreement = (
            float(np.mean(np.sum(result["vectors"][:, : reference.shape[1]] * reference, axis=1)))
            if result["vectors"].shape == reference.shape
            else float("nan")
        )
        rows.append((name, result["docs_per_s"], result["ndcg"], result["recall"], agreement))
        print(rows[-1], flush=True)
    print("\n| option | abstracts/s | dense nDCG@10 | Recall@50 | cosine to torch-fp32 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, rate, ndcg, recall, agreement in rows:
        print(f"| {name} | {rate:.1f} | {ndcg:.3f} | {recall:.3f} | {agreement:.3f} |")


if __name__ == "__main__":
    main()
