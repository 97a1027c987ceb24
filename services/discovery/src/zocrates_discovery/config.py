"""Settings of the discovery service (environment prefix `ZOCRATES_DISCOVERY_`, TOML table
`[discovery]`); the shared ones (Zotero dir, local user, ...) come from `ZocratesSettings`."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from zocrates_runtime.settings import ZocratesSettings


class DiscoverySettings(ZocratesSettings):
    """Everything the discovery service needs; its own fields are `ZOCRATES_DISCOVERY_<NAME>`.
    The novelty filter's library is the shared `zotero_dir`, owned by `local_user_id`."""

    model_config = SettingsConfigDict(env_prefix="ZOCRATES_DISCOVERY_")

    openalex_api_key: SecretStr | None = Field(
        default=None,
        description="OpenAlex API key, sent as `Authorization: Bearer`. Without one OpenAlex runs "
        "in demo mode on a small per-IP daily budget (about $0.10, some 100 searches a day).",
    )
    contact_email: str | None = Field(
        default=None,
        description="The deployment's contact e-mail: named in the User-Agent (courtesy), and sent to "
        "Crossref, Unpaywall and NCBI for users who registered none of their own (`POST /register`). "
        "Unpaywall needs one: without any, it is skipped.",
    )
    semantic_scholar_api_key: SecretStr | None = Field(
        default=None, description="Optional Semantic Scholar key (`x-api-key`); raises its rate limit."
    )

    openalex_url: str = "https://api.openalex.org"
    unpaywall_url: str = "https://api.unpaywall.org/v2"
    crossref_url: str = "https://api.crossref.org"
    semantic_scholar_url: str = "https://api.semanticscholar.org/graph/v1"
    pubmed_url: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"

    # Not `timeout_s`: ZOCRATES_DISCOVERY_TIMEOUT_S is the gateway's deadline for a whole discovery turn.
    http_timeout_s: float = Field(default=10.0, gt=0, description="Timeout of one HTTP request to a scholarly API.")
    abstract_timeout_s: float = Field(
        default=2.0, gt=0, description="Budget of each abstract backfill source (Semantic Scholar, PubMed)."
    )
    retries: int = Field(
        default=3, ge=1, le=10, description="Attempts per request on 429 throttles, 5xx and dropped connections."
    )
    retry_wait_initial_s: float = Field(default=0.5, ge=0)
    retry_wait_max_s: float = Field(default=8.0, ge=0)
    max_retry_after_s: float = Field(
        default=20.0,
        ge=0,
        description="A throttle asking to wait longer than this is reported instead of waited out.",
    )
    cache_ttl_s: float = Field(
        default=3600.0, ge=0, description="How long an API answer is reused; 0 disables the cache."
    )
    cache_size: int = Field(default=2048, ge=1)

    title_similarity: float = Field(
        default=0.88,
        gt=0,
        le=1,
        description="Normalised Levenshtein similarity of normalised titles at which a candidate counts as owned.",
    )
    per_query_results: int = Field(
        default=25,
        ge=1,
        le=200,
        description="Works asked per search query; more than `limit` so that owned papers can be dropped.",
    )

    @field_validator("openalex_api_key", "semantic_scholar_api_key", mode="after")
    @classmethod
    def _blank_key_is_no_key(cls, value: SecretStr | None) -> SecretStr | None:
        # OpenAlex answers an empty key with 401; an unset variable must mean "no key".
        if value is not None and not value.get_secret_value().strip():
            return None
        return value

    @field_validator("contact_email", mode="after")
    @classmethod
    def _blank_email_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @property
    def user_agent(self) -> str:
        contact = f"; mailto:{self.contact_email}" if self.contact_email else ""
        return f"Zocrates/0.1 (research assistant for Zotero{contact})"
