"""Dense embeddings (sentence-transformers, offline) and the optional cross-encoder reranker."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Literal

import numpy as np

from zocrates_retrieval.domain.searchable import searchable
from zocrates_runtime.device import DeviceChoice, cpu_has_bfloat16, resolve_device

# Never reach for the Hugging Face hub: models come from a package or a local directory.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


Precision = Literal["auto", "float32", "bfloat16"]


class Embedder:
    """A sentence-transformers model: normalised float32 vectors, and its tokenizer's counts.

    `precision`: `bfloat16` runs the model under CPU autocast, which a CPU with bfloat16
    instructions (AVX512-BF16 or AMX) computes natively: on two such cores it embeds 1.8x as
    fast as float32, its vectors within a cosine of 0.9999 of float32's, so an index holds
    either kind and none is rebuilt (docs/architecture.md). `auto` is bfloat16 on such a CPU
    and float32 everywhere else (a CPU without them would emulate it, slower than float32)."""

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
        if precision == "auto":
            precision = "bfloat16" if self.device == "cpu" and cpu_has_bfloat16() else "float32"
        if precision == "bfloat16" and self.device != "cpu":
            raise RuntimeError(
                f"bfloat16 embeddings run on the CPU only, and the embedding device is {self.device}; "
                "set ZOCRATES_RETRIEVAL_EMBEDDING_PRECISION to float32 or auto"
            )
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
        import torch

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
            features = {k: v.to(self.device) for k, v in encoded.items()}
            with torch.inference_mode(), self._computing():
                out = self.model.forward(features)
            tokens = out["token_embeddings"].float().cpu()
            dense[rows] = out["sentence_embedding"].float().cpu().numpy()
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
