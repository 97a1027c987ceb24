"""Gateway settings (env `ZOCRATES_*`, `.env`, or the top level of the TOML config file); the
shared ones (mode, NATS, data dir, local user, ...) come from `ZocratesSettings`, the port from
`GatewayPortSettings` (`make run` reads it too). See docs/configuration.md."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, model_validator

from zocrates_runtime.settings import GatewayPortSettings

#: Used only in local mode, where tokens never leave the laptop; hosted mode must set its own.
LOCAL_PEPPER = "zocrates-local-mode-pepper"


class GatewaySettings(GatewayPortSettings):
    gateway_host: str = Field(default="127.0.0.1", description="Address the HTTP API binds to")
    token_pepper: SecretStr = Field(
        default=SecretStr(LOCAL_PEPPER),
        description="HMAC key for stored token digests; required (and secret) in hosted mode",
    )
    cors_origins: list[str] = Field(
        default_factory=list, description='Browser origins allowed (JSON list); none by default'
    )
    ui_dir: Path | None = Field(
        default=None,
        description="The plugin's content directory served at /ui/; unset = plugin/content of this checkout",
    )

    # synthesis: any OpenAI-compatible chat-completions endpoint; extractive when unset
    llm_url: str | None = Field(default=None, description="e.g. https://openrouter.ai/api/v1")
    llm_api_key: SecretStr | None = Field(default=None, description="Bearer key for the LLM endpoint")
    llm_model: str = Field(default="gpt-4o-mini", description="Model name sent to the LLM endpoint")

    # the turn
    top_k: int = Field(
        default=12,
        ge=1,
        le=50,
        description="Evidence chunks per library turn (all of them compete for the offline answer)",
    )
    max_message_bytes: int = Field(default=32 * 1024, description="Largest accepted question (UTF-8 bytes)")
    citations_enabled: bool = Field(
        default=True, description="In-text citations on; off = every retrieved item listed as cited"
    )
    verification_enabled: bool = Field(default=True, description="Check every citation occurrence with the verifier")
    retrieval_timeout_s: float = Field(default=20.0, gt=0, description="Deadline of the retrieval stage")
    discovery_timeout_s: float = Field(default=45.0, gt=0, description="Deadline of the discovery stage")
    synthesis_timeout_s: float = Field(default=120.0, gt=0, description="Deadline of the LLM answer")
    staging_timeout_s: float = Field(default=120.0, gt=0, description="Deadline of staging one import batch")
    verification_timeout_s: float = Field(default=10.0, gt=0, description="per verification request")
    verification_budget_s: float = Field(default=20.0, gt=0, description="whole turn's verification")
    keepalive_s: float = Field(default=15.0, gt=0, description="SSE comment ping interval")

    # the lab-hosted library
    library_max_upload_mb: int = Field(
        default=100, ge=1, le=2048, description="Largest accepted attachment upload (MB)"
    )
    library_timeout_s: float = Field(
        default=30.0, gt=0, description="Deadline of a library sync page, upload record or status"
    )

    @model_validator(mode="after")
    def _refuse_default_pepper(self) -> GatewaySettings:
        if self.mode == "hosted" and self.token_pepper.get_secret_value() == LOCAL_PEPPER:
            raise ValueError("hosted mode needs its own ZOCRATES_TOKEN_PEPPER (a long random secret)")
        return self
