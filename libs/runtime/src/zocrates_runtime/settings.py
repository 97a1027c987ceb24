"""Settings every service shares, read by pydantic-settings.

Sources, highest first: init arguments, environment variables (`ZOCRATES_*`), a `.env` file,
then a TOML config file (`ZOCRATES_CONFIG`, default `zocrates.toml` in the working directory;
keys are the field names without the prefix). docs/configuration.md lists every setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)


def config_file() -> Path:
    return Path(os.environ.get("ZOCRATES_CONFIG", "zocrates.toml"))


class ZocratesSettings(BaseSettings):
    """Base for each service's settings; subclasses add fields and their own env prefix."""

    model_config = SettingsConfigDict(
        env_prefix="ZOCRATES_", env_file=".env", extra="ignore", validate_default=True
    )

    mode: Literal["local", "hosted"] = Field(
        default="local",
        description="`local`: one user on a laptop, loopback only. `hosted`: a lab deployment; "
        "refuses to start without NATS credentials.",
    )
    nats_url: str = Field(default="nats://127.0.0.1:4222", description="NATS server URL(s), comma-separated")
    nats_user: str | None = Field(default=None, description="NATS user (hosted mode)")
    nats_password: SecretStr | None = Field(default=None, description="NATS password")
    nats_creds_file: Path | None = Field(default=None, description="NATS .creds file (hosted mode)")
    stream_replicas: int = Field(default=1, ge=1, le=5,
                                 description="JetStream replicas of every stream and bucket (3 on a NATS cluster)")
    data_dir: Path = Field(default=Path("data"), description="Where local state lives")
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR")
    log_json: bool | None = Field(default=None, description="JSON logs; default: JSON unless on a terminal")
    otlp_endpoint: str | None = Field(default=None, description="OTLP/HTTP endpoint for traces, e.g. Phoenix")
    instance_id: str = Field(
        default_factory=lambda: os.urandom(6).hex(),
        pattern=r"^[A-Za-z0-9_-]{1,32}$",
        description="This replica's id; names its reply subject",
    )

    @model_validator(mode="after")
    def _refuse_unsafe(self) -> ZocratesSettings:
        if self.mode == "hosted" and not (self.nats_creds_file or self.nats_user):
            raise ValueError(
                "hosted mode needs NATS credentials: set ZOCRATES_NATS_CREDS_FILE or "
                "ZOCRATES_NATS_USER/ZOCRATES_NATS_PASSWORD (the embedded bus is loopback only)"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources = [init_settings, env_settings, dotenv_settings, file_secret_settings]
        path = config_file()
        if path.is_file():
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)
