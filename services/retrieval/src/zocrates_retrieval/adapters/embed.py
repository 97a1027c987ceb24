"""Dense embeddings (sentence-transformers, offline) and the optional cross-encoder reranker."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from pathlib import Path
from typing import Literal

import numpy as np

from zocrates_retrieval.domain.searchable import searchable
from zocrates_runtime.device import (
    DeviceChoice,
    OpenVINOOnCPU,
    cpu_has_amx,
    cpu_has_bfloat16,
    cpu_has_int8_dot,
    openvino_on_cpu,
    resolve_device,
)

log = logging.getLogger(__name__)

# Never reach for the Hugging Face hub: models come from a package or a local directory.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


Precision = Literal["auto", "float32", "bfloat16", "int8"]

#: all-MiniLM-L6-v2 quantised to int8 for OpenVINO (`tools/quantize_embedder.py`), with the
#: sha256 of the weights it was made from: it stands in for those weights only.
INT8_DIR = Path(__file__).resolve().parent.parent / "models" / "all-MiniLM-L6-v2-int8"


class Embedder:
    """A sentence-transformers model: normalised float32 vectors, and its tokenizer's counts.

    `precision`: `bfloat16` runs the model under CPU autocast, which a CPU with bfloat16
    instructions (AVX512-BF16 or AMX) computes natively: on two such cores it embeds 1.8x as
    fast as float32, its vectors within a cosine of 0.9999 of float32's, so an index holds
    either kind and none is rebuilt (docs/architecture.md). `int8` runs the shipped int8 copy of
    all-MiniLM-L6-v2 through OpenVINO (`INT8_DIR`), which a CPU with int8 dot products (VNNI or
    AMX) computes about 1.5x as fast again (without AMX), its vectors within a mean cosine of 0.999
    of float32's. `auto` is int8 where that copy matches the configured model and the CPU has
    them but not AMX, whose bfloat16 embeds as fast and keeps float32's ranking; else bfloat16 on
    a CPU that has it, else float32 (a CPU without them would emulate it, slower)."""

    def __init__(self, model: str, device: str = "auto", batch_size: int = 32, precision: Precision = "auto"):
        from sentence_transformers import SentenceTransformer

        self.name = model
        #: The device `device` resolved to by the runtime's probe (a tensor op in a child
        #: process), and why each better candidate was rejected.
        self.device_choice: DeviceChoice = resolve_device(device)
        self.device = self.device_choice.device
        self.requested_device = device
        self.batch_size = batch_size
        try:
            self.model = SentenceTransformer(model, device=self.device, local_files_only=True)
        except Exception as exc:
            raise RuntimeError(
                f"cannot load the embedding model {model!r} offline ({exc}); set "
                "ZOCRATES_RETRIEVAL_EMBEDDING_MODEL to a local sentence-transformers directory"
            ) from exc
        self.dim = int(
            self.model.get_embedding_dimension()
            if hasattr(self.model, "get_embedding_dimension")
            else self.model.get_sentence_embedding_dimension()
        )
        self.max_tokens = int(self.model.max_seq_length or 512)
        self._tokenizer = _fast_tokenizer(model)
        self._int8 = None
        #: Why `auto` did not run the int8 copy it chose (it failed to load here), else None.
        self.int8_failure: str | None = None
        chosen = precision == "auto"
        if chosen:
            if self.device != "cpu":
                precision = "float32"
            elif cpu_has_int8_dot() and not cpu_has_amx() and int8_copy_of(model) is not None:
                precision = "int8"
            else:
                precision = "bfloat16" if cpu_has_bfloat16() else "float32"
        if precision in ("bfloat16", "int8") and self.device != "cpu":
            raise RuntimeError(
                f"{precision} embeddings run on the CPU only, and the embedding device is {self.device}; "
                "set ZOCRATES_RETRIEVAL_EMBEDDING_PRECISION to float32 or auto"
            )
        if precision == "int8":
            try:
                self._int8 = _load_int8(model)
            except Exception as exc:
                if not chosen:
                    raise
                # An optional speed-up must not stop retrieval: torch embeds the same vectors.
                precision = "bfloat16" if cpu_has_bfloat16() else "float32"
                self.int8_failure = f"{type(exc).__name__}: {exc}"
                log.warning("the int8 embedding model did not load (%s); embedding in %s", self.int8_failure, precision)
        self.precision = precision

    @classmethod
    def shared(cls, model: str, device: str = "auto", batch_size: int = 32, precision: Precision = "auto") -> Embedder:
        """One loaded copy per (model, device, batch size, precision) in this process: the
        weights are read-only at inference, so services and tests in one process can share them."""
        return _shared(cls, model, device, batch_size, precision)

    def _computing(self):
        """The context the model runs in: CPU autocast to bfloat16, or nothing."""
        if self.precision != "bfloat16":
            return contextlib.nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)

    def count_tokens(self, text: str) -> int:
        if self._tokenizer is not None:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return len(self.model.tokenizer.tokenize(text))

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._int8 is not None:
            return self.embed_with_spans(texts, [[] for _ in texts])[0]
        with self._computing():
            vectors = self.model.encode(
                [searchable(t) for t in texts],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)

    def embed_with_spans(
        self, texts: list[str], spans: list[list[tuple[int, int]]]
    ) -> tuple[np.ndarray, list[np.ndarray]]:
        """Each text's vector and, from the same forward pass, a vector for each of its
        character spans: the mean of the span's contextual token embeddings, normalised ("late
        chunking"). A unit so embedded reads in its passage's context, and costs no pass of its
        own; a span past the model's input length is embedded on its own instead.

        Texts of like length are batched together: a batch is padded to its longest text, and
        a chunk's length varies from a few words to the model's limit, so batches in the given
        order compute on padding (1.16x as fast sorted, docs/architecture.md)."""
        tokenizer = self.model.tokenizer
        searchables = [searchable(t) for t in texts]  # one for one: spans hold
        lengths = [len(ids) for ids in tokenizer(searchables, truncation=True, max_length=self.max_tokens)["input_ids"]]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        dense = np.zeros((len(texts), self.dim), dtype=np.float32)
        span_vectors: list[np.ndarray] = [np.zeros((0, self.dim), dtype=np.float32)] * len(texts)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            batch = [searchables[i] for i in rows]
            encoded = tokenizer(
                batch,
                padding=True,
                truncation=True,
                max_length=self.max_tokens,
                return_offsets_mapping=True,
                return_tensors="pt",
            )
            offsets = encoded.pop("offset_mapping")
            tokens, dense[rows] = self._forward(encoded)
            for row, i in enumerate(rows):
                span_vectors[i] = pool_spans(
                    batch[row],
                    tokens[row],
                    encoded["attention_mask"][row],
                    offsets[row],
                    spans[i],
                    self.embed_documents,
                )
        return dense, span_vectors

    def _forward(self, encoded) -> tuple:
        """One batch through the model: each token's contextual embedding (a CPU tensor) and
        each text's normalised mean of them, as the sentence-transformers pipeline pools."""
        import torch

        if self._int8 is not None:
            tokens = torch.from_numpy(self._int8.infer({k: v.numpy() for k, v in encoded.items()})[0])
            mask = encoded["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1)
            return tokens, torch.nn.functional.normalize(mean, dim=-1).numpy()
        features = {k: v.to(self.device) for k, v in encoded.items()}
        with torch.inference_mode(), self._computing():
            out = self.model.forward(features)
        return out["token_embeddings"].float().cpu(), out["sentence_embedding"].float().cpu().numpy()

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def pool_spans(text: str, tokens, attention_mask, offsets, spans, embed_alone) -> np.ndarray:
    """The normalised vectors of `spans` (character ranges of `text`) from one forward pass over
    it: each the mean of the contextual embeddings of the tokens it covers (`tokens`: one row of
    the pass, on the CPU; `offsets`: the tokenizer's character offsets). A span past the model's
    input length has no token there and is embedded on its own, by `embed_alone`."""
    real = attention_mask.bool() & (offsets[:, 1] > offsets[:, 0])
    found = np.zeros((len(spans), tokens.shape[-1]), dtype=np.float32)
    missing = []
    for i, (a, b) in enumerate(spans):
        inside = real & (offsets[:, 0] < b) & (offsets[:, 1] > a)
        if inside.any():
            found[i] = tokens[inside].mean(0).numpy()
        else:
            missing.append(i)
    if missing:  # cut off by the model's input length
        found[missing] = embed_alone([text[spans[i][0] : spans[i][1]] for i in missing])
    found /= np.maximum(np.linalg.norm(found, axis=1, keepdims=True), 1e-12)
    return found


@functools.lru_cache(maxsize=4)
def int8_copy_of(model: str) -> Path | None:
    """The shipped int8 copy when it was made from `model`'s weights (by their sha256) and
    OpenVINO is installed; None otherwise."""
    import hashlib
    import importlib.util
    import json

    weights = Path(model) / "model.safetensors"
    source = INT8_DIR / "source.json"
    if not (weights.is_file() and source.is_file() and importlib.util.find_spec("openvino")):
        return None
    with weights.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return INT8_DIR if json.loads(source.read_text())["weights_sha256"] == digest else None


def _load_int8(model: str) -> OpenVINOOnCPU:
    """The int8 copy of `model`, compiled for this CPU with as many threads as torch uses."""
    path = int8_copy_of(model)
    if path is None:
        raise RuntimeError(
            f"no int8 copy of {model!r} (it needs the openvino package and {INT8_DIR} made from these "
            "weights); set ZOCRATES_RETRIEVAL_EMBEDDING_PRECISION to auto, bfloat16 or float32"
        )
    # what stays in floating point runs in bfloat16 where the CPU has it natively
    return openvino_on_cpu(path / "model.xml", bfloat16=cpu_has_bfloat16())


@functools.lru_cache(maxsize=4)
def _shared(cls: type[Embedder], model: str, device: str, batch_size: int, precision: Precision) -> Embedder:
    return cls(model, device, batch_size, precision)


def _fast_tokenizer(model: str):
    """The model's `tokenizer.json` through the Rust `tokenizers` library, when it has one:
    counting tokens for every paragraph must be cheap."""
    path = Path(model) / "tokenizer.json"
    if not path.is_file():
        return None
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()  # the shipped tokenizer.json pads to 128, which would count as text
    return tokenizer


class Reranker:
    """A cross-encoder from a local directory; scores (query, passage) pairs."""

    def __init__(self, model_dir: Path, device: str = "auto"):
        """`device` resolved by the same probe as the embedder's (the service passes the
        embedder's resolved device, so `auto` is probed once)."""
        from sentence_transformers import CrossEncoder

        if not Path(model_dir).is_dir():
            raise RuntimeError(
                f"reranker directory {model_dir} does not exist; unset "
                "ZOCRATES_RETRIEVAL_RERANKER_DIR to search without reranking"
            )
        self.device = resolve_device(device).device
        self.model = CrossEncoder(str(model_dir), device=self.device, local_files_only=True)

    def scores(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        out = self.model.predict([(query, p) for p in passages], show_progress_bar=False)
        return [float(x) for x in np.asarray(out).reshape(len(passages), -1)[:, -1]]
