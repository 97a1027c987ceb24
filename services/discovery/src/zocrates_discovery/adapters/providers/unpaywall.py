"""Unpaywall (https://unpaywall.org/products/api): the legal open-access copy of a DOI.

Unpaywall requires an `email` parameter on every request; without a contact (the requester's
or the configured one) the resolver is disabled rather than sending a made-up address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zocrates_discovery.adapters.http import Http
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.domain.contact import contact_email


@dataclass(frozen=True)
class OpenAccess:
    """Where a legal copy is: the PDF (if there is one), its licence, version and OA status."""

    pdf_url: str | None
    landing_url: str | None
    license: str | None
    version: str | None
    oa_status: str | None


def parse_record(record: dict[str, Any]) -> OpenAccess:
    best = record.get("best_oa_location") or {}
    pdf = best.get("url_for_pdf") or next(
        (loc.get("url_for_pdf") for loc in record.get("oa_locations") or [] if loc.get("url_for_pdf")), None
    )
    return OpenAccess(
        pdf_url=pdf,
        landing_url=best.get("url_for_landing_page"),
        license=best.get("license"),
        version=best.get("version"),
        oa_status=record.get("oa_status"),
    )


class Unpaywall:
    def __init__(self, http: Http, settings: DiscoverySettings):
        self._http = http
        self._base = settings.unpaywall_url.rstrip("/")
        self._configured_email = settings.contact_email

    @property
    def enabled(self) -> bool:
        """Whether the request being answered has a contact to send (its own or the configured one)."""
        return contact_email(self._configured_email) is not None

    async def lookup(self, doi: str) -> OpenAccess | None:
        """The OA record of `doi`; None when Unpaywall does not know the DOI or is disabled."""
        email = contact_email(self._configured_email)
        if not email:
            return None
        fetched = await self._http.get(f"{self._base}/{doi}", params={"email": email})
        return parse_record(fetched.data) if fetched and isinstance(fetched.data, dict) else None
