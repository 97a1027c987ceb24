"""Settings of the verifier, read from `ZOCRATES_VERIFIER_*` environment variables.

One `VerifierSettings` per process. `provider="auto"` picks the most capable backend that is
configured: a local checkpoint (`model_dir`), then a remote `/v1/systemone` server
(`remote_url` set explicitly), then OpenRouter (a key), else the trained model that ships with
the verifier (`zocrates_verifier/model`), with the offline heuristic answering when its weights
are absent or fail to load (docs/verifier-model.md). `provider="local"` without a `model_dir`
is the shipped model too; `provider="heuristic"` the heuristic alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from zocrates_contracts import SUPPORT_THRESHOLD
from zocrates_runtime.settings import ZocratesSettings
from zocrates_verifier.adapters.backends import local_torch
from zocrates_verifier.domain import windows
from zocrates_verifier.domain.numbers import UNPRINTED_NUMBER_SUPPORT

Provider = Literal["auto", "heuristic", "local", "remote", "openrouter"]

#: The default model of the OpenRouter decisions endpoint (TypeSafe Jev, auto-updating).
DEFAULT_OPENROUTER_MODEL = "~typesafe/jev-latest"


class VerifierSettings(ZocratesSettings):
    """Everything the verifier reads from its configuration (environment, `.env`, the TOML
    file's `[verifier]` table); see each field. The shared settings come from the base."""

    model_config = SettingsConfigDict(env_prefix="ZOCRATES_VERIFIER_")

    enabled: bool = Field(True, description="Verification on; off makes every score None.")
    provider: Provider = Field("auto", description="Which backend answers; auto picks one.")
    model_dir: Path | None = Field(
        None,
        description="Local checkpoint: a Hugging Face sequence-classification (NLI or "
        "cross-encoder) directory, or a Laya checkpoint (has rl_agent_config.json; needs "
        "the laya package: pip install 'zocrates-verifier[laya]'). Unset: the trained model "
        "that ships in the package (zocrates_verifier/model), or the heuristic when it is absent "
        "or fails to load.",
    )
    model: str = Field(
        "",
        description="Model name: reported for local checkpoints, sent to a remote server "
        f"(empty = its default), the OpenRouter model (empty = {DEFAULT_OPENROUTER_MODEL}).",
    )
    threshold: float | None = Field(
        None,
        ge=0.50,
        le=0.95,
        validation_alias=AliasChoices("ZOCRATES_VERIFIER_THRESHOLD", "ZOCRATES_VERIFICATION_THRESHOLD"),
        description="Support probability a citation occurrence needs to be kept. Unset: the threshold "
        "the answering model was calibrated for (the trained model's, in its config.json), or "
        f"{SUPPORT_THRESHOLD} for the heuristic and any model that carries none. Every reply carries "
        "it, and the gateway judges the reply's scores against it, unless the user chose their own "
        "(`PUT /settings`, docs/api.md).",
    )
    device: str = Field(
        "auto",
        description="auto (cuda, mps, xpu, cpu by probe) or a torch "
        "device such as cuda:0; pin a GPU with CUDA_VISIBLE_DEVICES.",
    )
    dtype: Literal["auto", "float32", "float16", "bfloat16", "int8"] = Field(
        "auto",
        description="auto = float16 on a GPU, bfloat16 on a CPU that has it natively "
        "(AVX512-BF16 or AMX), else float32; int8 = dynamic "
        "quantisation of the linear layers, CPU only. Hugging Face checkpoints only: Laya picks "
        "its own (LAYA_CPU_AMP, the checkpoint's amp_dtype).",
    )
    runtime: Literal["auto", "torch", "openvino"] = Field(
        "auto",
        description="What runs a Hugging Face checkpoint on the CPU in float32 or bfloat16: auto = OpenVINO "
        "where it is installed and cpu_threads gives the model more than one thread (converted when the model "
        "loads, about 2 s and 170 MB; 1.3-1.4x torch's pairs/s with two threads, docs/verifier-model.md), "
        "torch if the conversion fails, torch with one thread (the default, where it gained 8 %); torch; or "
        "openvino, which fails instead of falling back. A GPU, float16 and int8 always run in torch.",
    )

    max_windows: int = Field(
        windows.MAX_WINDOWS,
        ge=1,
        le=32,
        description="Hugging Face checkpoints: windows of a passage (sentences, runs of two or "
        "three, the whole when short) a claim is scored against, its best window answering; 1 = "
        "the whole passage as one row (docs/verifier-model.md, Sentence windows).",
    )
    verbatim_rule: bool = Field(
        True,
        description="A quote scores at least 0.99 whatever the model (or the heuristic) says: a "
        "pair the gateway sends as the answer writer's rendering of a unit of its passage "
        "(`quoted`), or a claim of six words or more that is word for word whole sentences of its "
        "passage (/health counts such pairs and shows the model's own score of the last).",
    )
    number_rule: bool = Field(
        True,
        description="A claim stating a number in digits that its passage does not print (rounding "
        "allowed: 76% for 76.3%; ordinals, decades and table or figure numbers aside) scores at most "
        f"{UNPRINTED_NUMBER_SUPPORT}, whatever the model (or the heuristic) says; the verbatim rule still raises a quote "
        "(/health counts the pairs capped; docs/verifier-model.md, The number rule).",
    )

    cpu_threads: int = Field(
        1,
        ge=0,
        le=256,
        description="Torch intra-op threads when a model runs on CPU; 0 = torch's default (one "
        "per core). One by default: the verifier shares the CPU with the other services, and with "
        "one thread per core every op waits at its fork-join whenever another process holds a core "
        "(median turn 1,075 ms with two threads against 111 ms with one on a loaded 2-core machine; "
        "docs/verifier-model.md). A machine that runs the verifier alone may set 0.",
    )

    # --- micro-batching (local and heuristic backends) ---------------------------------------
    max_batch_tokens: int = Field(
        16_384, ge=64, description="Padded tokens per forward pass (pairs x longest pair); a batch closes when full."
    )
    max_batch_pairs: int = Field(128, ge=1, le=4096, description="Pairs per forward pass.")
    max_wait_ms: float = Field(
        5.0,
        ge=0.0,
        le=1000.0,
        description="How long the oldest queued pair waits for batch-mates before its batch closes anyway.",
    )
    max_queue_pairs: int = Field(
        4096,
        ge=1,
        description="Queued pairs beyond which new work is refused as overloaded (503 / nak) instead of queued.",
    )
    max_seq_len: int = Field(512, ge=16, le=8192, description="Tokens per pair (truncated).")
    warmup: bool = Field(
        True, description="Run one tiny batch at start so the first request does not pay for lazy initialisation."
    )

    # --- remote /v1/systemone server ------------------------------------------------------
    remote_url: str = Field(
        "http://127.0.0.1:8005/v1/systemone", description="A Laya or Jev-compatible server; /batch is appended."
    )
    remote_api_key: SecretStr | None = None
    remote_max_states: int = Field(64, ge=1, le=512, description="States per batch request (laya-serve caps 64).")

    # --- OpenRouter decisions -------------------------------------------------------------
    openrouter_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("ZOCRATES_VERIFIER_OPENROUTER_API_KEY", "OPENROUTER_API_KEY")
    )
    openrouter_url: str = "https://openrouter.ai/api/alpha/decisions"
    openrouter_chat_url: str = "https://openrouter.ai/api/v1/chat/completions"
    openrouter_fallback_model: str = Field(
        "", description="Model for the chat-completions fallback (empty = the same model)."
    )
    openrouter_concurrency: int = Field(8, ge=1, le=64, description="Decision requests in flight at once.")

    # --- deadlines ------------------------------------------------------------------------
    request_timeout_s: float = Field(10.0, gt=0, le=120, description="Per backend call, and per HTTP request.")

    # --- HTTP API -------------------------------------------------------------------------
    http_host: str = Field("127.0.0.1", description="Address of the /v1/systemone HTTP API.")
    http_port: int | None = Field(
        8005, ge=1, le=65535, description="Port of the /v1/systemone HTTP API; empty = bus only (no HTTP API)."
    )
    http_api_key: SecretStr | None = Field(
        None, description="When set, every route but /health's liveness needs this bearer."
    )
    http_max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024)
    http_max_states: int = Field(64, ge=1, le=512)
    http_max_questions: int = Field(8, ge=1, le=64)
    http_max_concurrent: int = Field(16, ge=1, le=1024, description="Requests admitted at once; more get 503.")

    @field_validator("http_port", mode="before")
    @classmethod
    def _empty_port_is_bus_only(cls, value: object) -> object:
        # An environment variable cannot be "unset" past a default: `ZOCRATES_VERIFIER_HTTP_PORT=`
        # (what the image's health check already reads as bus only) turns the HTTP API off.
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _explicit_provider_is_configured(self) -> VerifierSettings:
        if self.provider == "local" and self.model_dir is None and not local_torch.shipped_model_present():
            raise ValueError(
                "provider=local needs ZOCRATES_VERIFIER_MODEL_DIR (a checkpoint "
                "directory), and the shipped model is not at "
                f"{local_torch.SHIPPED_MODEL_DIR}; set the provider to auto (the offline "
                "heuristic answers in its place) or heuristic"
            )
        return self

    def resolved_provider(self) -> str:
        """The backend `auto` stands for, given what is configured."""
        if self.provider != "auto":
            return self.provider
        if self.model_dir is not None:
            return "local"
        if "remote_url" in self.model_fields_set:
            return "remote"
        if self.openrouter_api_key is not None:
            return "openrouter"
        # The trained model that ships with the verifier (docs/verifier-model.md); the service
        # answers with the heuristic, and says why, when its weights are absent or do not load.
        return "local"

    def checkpoint_dir(self) -> Path:
        """The checkpoint the local backend loads: `model_dir`, else the shipped model."""
        return self.model_dir if self.model_dir is not None else local_torch.SHIPPED_MODEL_DIR

    def uses_shipped_model(self) -> bool:
        """The local backend answers with the shipped model (no `model_dir` configured)."""
        return self.resolved_provider() == "local" and self.model_dir is None
