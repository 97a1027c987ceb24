"""The files of a staged batch: their names, and the record of each candidate that was not staged."""

from __future__ import annotations

import hashlib
import re

import httpx

from zocrates_contracts import Candidate, StagedFile


def staged_id_for(user_id: str, batch_id: str, candidate_id: str) -> str:
    """The object name of a candidate's PDF: stable across redeliveries, unique per user."""
    return hashlib.sha256(f"{user_id}\0{batch_id}\0{candidate_id}".encode()).hexdigest()[:32]


def url_key(url: str) -> str:
    """Two PDF URLs that fetch the same thing map to the same key (fragment dropped)."""
    try:
        return str(httpx.URL(url.strip()).copy_with(fragment=None))
    except (httpx.InvalidURL, TypeError):
        return url


def suggested_filename(candidate: Candidate) -> str:
    """A plain file name for the import, from the title (or the id)."""
    stem = re.sub(r"[^A-Za-z0-9]+", "_", candidate.title).strip("_")[:80]
    return f"{stem or candidate.candidate_id}.pdf"


def failed(candidate: Candidate, reason: str) -> StagedFile:
    """The record of a candidate whose PDF could not be staged, and why."""
    return StagedFile(candidate_id=candidate.candidate_id, status="failed", reason=reason)


def duplicate(first: StagedFile, candidate_id: str) -> StagedFile:
    """The record of a candidate whose PDF URL an earlier candidate of the batch already has."""
    same = f"same PDF URL as candidate {first.candidate_id}, fetched once"
    if first.status == "staged":
        return StagedFile(
            candidate_id=candidate_id,
            status="duplicate",
            object_name=first.object_name,
            sha256=first.sha256,
            size=first.size,
            reason=same,
        )
    return first.model_copy(update={"candidate_id": candidate_id, "reason": f"{first.reason} ({same})"})
