"""Settings of the staging service: `ZOCRATES_STAGING_*` environment variables (or `.env`, or
the `[staging]` table of the TOML config file); the shared ones come from `ZocratesSettings`.

Lists are JSON in the environment, e.g. `ZOCRATES_STAGING_ALLOWED_PORTS='[80, 443, 8080]'`;
`EXPIRE_AFTER` takes seconds or an ISO 8601 duration (`PT6H`).
"""

from __future__ import annotations

import ipaddress
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict

from zocrates_runtime.settings import ZocratesSettings
from zocrates_runtime.staged_store import DEFAULT_BUCKET, DEFAULT_TTL

MiB = 1024 * 1024


class StagingSettings(ZocratesSettings):
    """Everything the staging service reads from its configuration; see each field."""

    model_config = SettingsConfigDict(env_prefix="ZOCRATES_STAGING_")

    # --- downloads ------------------------------------------------------------------------
    max_bytes: int = Field(
        100 * MiB,
        ge=1024,
        description="Largest PDF accepted; the download is aborted one chunk past it whatever Content-Length says.",
    )
    total_timeout_s: float = Field(
        15.0, gt=0, description="Deadline for one whole download, redirects included (stops slow-drip servers)."
    )
    connect_timeout_s: float = Field(5.0, gt=0, description="DNS resolution and TCP/TLS connect.")
    read_timeout_s: float = Field(10.0, gt=0, description="Longest wait for the next bytes.")
    max_redirects: int = Field(5, ge=0, le=20, description="Redirect hops followed, each checked.")
    allowed_ports: list[int] = Field([80, 443], min_length=1, description="Destination ports the guard lets through.")
    concurrency: int = Field(4, ge=1, le=64, description="Downloads in flight, all batches.")
    user_agent: str = Field("Zocrates-staging/0.1", description="User-Agent of every download.")
    unsafe_allow_addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = Field(
        [],
        description="TESTS ONLY: loopback addresses the SSRF guard lets through, so a test "
        "can serve PDFs from 127.0.0.1. Only loopback addresses are accepted.",
    )

    # --- the deeper PDF check, in a resource-limited subprocess ------------------------------
    pdf_check: Literal["auto", "pymupdf", "pypdf", "off"] = Field(
        "auto",
        description="Parser for the deeper check: auto = pymupdf if installed, else "
        "pypdf; off = only the %PDF- magic check.",
    )
    check_timeout_s: float = Field(20.0, gt=0, description="Wall-clock limit of one check.")
    check_cpu_s: int = Field(15, ge=1, description="RLIMIT_CPU of the check process.")
    check_memory_mb: int = Field(
        1536, ge=16, description="RLIMIT_AS of the check process (importing pymupdf alone maps about 540 MB)."
    )
    check_max_pages: int = Field(5000, ge=1, description="More pages than this is refused.")
    check_max_inflated_mb: int = Field(
        300, ge=1, description="Refused when the decompressed streams add up to more (bombs)."
    )
    check_concurrency: int = Field(2, ge=1, le=32, description="Checks running at once.")

    # --- storage --------------------------------------------------------------------------
    expire_after: timedelta = Field(DEFAULT_TTL, description="How long a staged file is kept.")
    expire_every_s: float = Field(300.0, gt=0, description="How often expired files are removed.")
    bucket: str = Field(DEFAULT_BUCKET, description="NATS Object Store bucket of staged files.")
    work_dir: Path = Field(
        Path(tempfile.gettempdir()) / "zocrates-staging",
        description="Where downloads are written before they are stored.",
    )

    @field_validator("unsafe_allow_addresses")
    @classmethod
    def _loopback_only(cls, value: list) -> list:
        # The exemption exists for tests on 127.0.0.1; refusing anything else keeps a stray
        # setting from opening the metadata service or the LAN.
        for ip in value:
            if not ip.is_loopback:
                raise ValueError(f"unsafe_allow_addresses accepts loopback addresses only, got {ip}")
        return value

    @field_validator("expire_after")
    @classmethod
    def _positive(cls, value: timedelta) -> timedelta:
        if value <= timedelta(0):
            raise ValueError(f"expire_after must be positive, got {value}")
        return value
