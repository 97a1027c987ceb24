"""Gateway settings (env `ZOCRATES_*`, `.env`, or the top level of the TOML config file); the
shared ones (mode, NATS, data dir, local user, ...) come from `ZocratesSettings`, the port from
`GatewayPortSettings` (`make run` reads it too). See docs/configuration.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from zocrates_runtime.settings import GatewayPortSettings

#: Used only in local mode, where tokens never leave the laptop; hosted mode must set its own.
LOCAL_PEPPER = "zocrates-local-mode-pepper"

_ROLE_KEY = "Unset: ZOCRATES_LLM_API_KEY, unless the role has a URL of its own"

#: The language model's jobs, each configurable apart (`llm_<role>_model`, `_url`, `_api_key`).
Role = Literal["coordinator", "synthesizer", "online_search", "online_synthesizer", "attribution"]


@dataclass(frozen=True)
class Endpoint:
    """Where one role's chat completions go."""

    url: str
    model: str
    api_key: SecretStr | None = None


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
    # Roles: each may have its own model, URL and key; unset, it inherits the ones above (a role
    # with a URL of its own gets no key but its own: it is another provider).
    llm_coordinator_model: str | None = Field(
        default=None, description="Routing (library, new literature or conversation) and follow-up rewriting"
    )
    llm_coordinator_url: str | None = Field(default=None, description="Unset: ZOCRATES_LLM_URL")
    llm_coordinator_api_key: SecretStr | None = Field(default=None, description=_ROLE_KEY)
    llm_synthesizer_model: str | None = Field(default=None, description="The cited answer from the library")
    llm_synthesizer_url: str | None = Field(default=None, description="Unset: ZOCRATES_LLM_URL")
    llm_synthesizer_api_key: SecretStr | None = Field(default=None, description=_ROLE_KEY)
    llm_online_search_model: str | None = Field(
        default=None, description="The OpenAlex queries and date filter of a request for new literature"
    )
    llm_online_search_url: str | None = Field(default=None, description="Unset: ZOCRATES_LLM_URL")
    llm_online_search_api_key: SecretStr | None = Field(default=None, description=_ROLE_KEY)
    llm_online_synthesizer_model: str | None = Field(default=None, description="The overview of new literature")
    llm_online_synthesizer_url: str | None = Field(default=None, description="Unset: ZOCRATES_LLM_URL")
    llm_online_synthesizer_api_key: SecretStr | None = Field(default=None, description=_ROLE_KEY)
    llm_attribution_model: str | None = Field(
        default=None,
        description="Sentence-level attribution in the inspector: the sentences of a cited passage that "
        "state a claim, and the facts none states (without it the verifier scores each sentence)",
    )
    llm_attribution_url: str | None = Field(default=None, description="Unset: ZOCRATES_LLM_URL")
    llm_attribution_api_key: SecretStr | None = Field(default=None, description=_ROLE_KEY)
    llm_routing: bool = Field(
        default=True,
        description="With a language model, let the coordinator route a message the rules would send to the "
        "library (the rules decide when it fails or answers nonsense)",
    )
    llm_fallback: bool = Field(
        default=True,
        description="When the language model fails (an HTTP error, a cut or stalled stream), answer with "
        "quotes from the library and a note saying so; off = the turn ends with the error",
    )

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

    def llm_for(self, role: Role) -> Endpoint | None:
        """The endpoint of `role`: its own model, URL and key where set, else the default ones;
        None when neither has a URL (no language model: the offline paths answer)."""
        url = getattr(self, f"llm_{role}_url") or self.llm_url
        if not url:
            return None
        model = getattr(self, f"llm_{role}_model") or self.llm_model
        key = getattr(self, f"llm_{role}_api_key") or (
            self.llm_api_key if not getattr(self, f"llm_{role}_url") else None
        )
        return Endpoint(url=url, model=model, api_key=key)

    @model_validator(mode="after")
    def _refuse_default_pepper(self) -> GatewaySettings:
        if self.mode == "hosted" and self.token_pepper.get_secret_value() == LOCAL_PEPPER:
            raise ValueError("hosted mode needs its own ZOCRATES_TOKEN_PEPPER (a long random secret)")
        return self
