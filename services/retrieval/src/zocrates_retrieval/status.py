"""Where a user's library stands: the `LibraryStatus` reply of GET /library/status, and the
message a search gives when nothing of the library is searchable yet.

A local library's progress is this process's; a hosted one's is in the catalog's `r.<user>`
record, so every replica answers alike.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from zocrates_contracts import IngestFailure, LibraryStatus, LibraryStatusRequested, ServiceError
from zocrates_contracts.messages import MAX_STATUS_FAILURES
from zocrates_retrieval.adapters.catalog import Catalog, CatalogCounts
from zocrates_retrieval.ingest import INDEX_VERSION, IngestProgress

SERVICE = "retrieval"


def shown(progress: IngestProgress) -> dict:
    """A run's progress as status shows it: every failure counted, the first few listed."""
    out = progress.as_dict()
    out["failures_total"] = len(out["failures"])
    out["failures"] = out["failures"][:MAX_STATUS_FAILURES]
    return out


async def hosted_progress(catalog: Catalog, user_id: str, lease_s: float) -> tuple[dict | None, str]:
    """A hosted user's last ingest progress (`shown` form) and state, from the catalog."""
    run, _ = await catalog.index_run(user_id)
    p = run.progress
    state = p["state"] if p else "idle"
    version = await catalog.version(user_id)
    if run.held(time.time(), lease_s) or (version and not run.indexed(version, INDEX_VERSION)):
        state = "running"  # going, or waiting for a replica to take it (a stopped run's too)
    return p, state


def not_indexed_message(progress: dict | None, state: str, no_local_library: bool) -> str:
    """Why a search found nothing: no library, indexing still going or failed, nothing readable.
    `no_local_library`: the user is the local one and no Zotero directory was found."""
    p = progress
    if p is None and no_local_library:
        return (
            "No Zotero library was found on this machine: set ZOCRATES_ZOTERO_DIR to your Zotero "
            "data directory (the folder holding zotero.sqlite) and start again, e.g. "
            "`ZOCRATES_ZOTERO_DIR=~/Zotero make run`."
        )
    if p is None:
        return "Your library is not indexed yet: no library has been synced for this account."
    if state == "running":
        return f"Your library is not indexed yet: {p['sources_done']} of {p['sources_total']} attachments done."
    if state == "failed":
        return f"Indexing your library failed: {p['error']}"
    failed = p["failures_total"]
    reasons = ", ".join(f"{n} {r}" for r, n in sorted(p["failures_by_reason"].items()))
    return "Your library has no searchable text yet" + (
        f": {failed} of {p['sources_total']} attachments could not be read ({reasons})." if failed else "."
    )


def library_status(
    request: LibraryStatusRequested,
    *,
    source: str,
    state: str,
    ready: bool,
    error: str | None,
    progress: dict | None,
    counts: CatalogCounts | None,
    chunks_indexed: int | None,
) -> LibraryStatus:
    """The status reply: the last run's `progress` (`shown` form), a hosted library's catalog
    `counts`, and the service's own `error` (not started, index unreadable), if any."""
    p = progress or {}
    failures = [IngestFailure(**{k: f[k] for k in IngestFailure.model_fields if k in f}) for f in p.get("failures", [])]
    error = error or (p.get("error") if state == "failed" else None)
    if counts is None:  # a local library: its counts are the run's
        items, attachments, uploaded, awaiting_upload, last_sync = (
            p.get("items", 0),
            p.get("attachments", 0),
            0,
            0,
            None,
        )
    else:
        items, attachments, uploaded, awaiting_upload, last_sync = (
            counts.items,
            counts.attachments,
            counts.uploaded,
            counts.awaiting_upload,
            counts.last_sync_at,
        )
    return LibraryStatus(
        **request.reply_fields(),
        source=source,
        state=state,
        ready=ready,
        items=items,
        attachments=attachments,
        uploaded=uploaded,
        awaiting_upload=awaiting_upload,
        sources_total=p.get("sources_total", 0),
        sources_done=p.get("sources_done", 0),
        indexed=p.get("indexed", 0) + p.get("unchanged", 0),
        chunks_indexed=chunks_indexed,
        abstracts=p.get("abstracts", 0),
        files_searchable=p.get("files_searchable", 0),
        pages=p.get("pages", 0),
        pages_per_s=p.get("pages_per_s"),
        eta_s=p.get("eta_s") if state == "running" else None,
        failures_by_reason=p.get("failures_by_reason", {}),
        failures=failures[:MAX_STATUS_FAILURES],
        last_sync_at=datetime.fromtimestamp(last_sync, UTC) if last_sync else None,
        error=ServiceError(code="not_available", service=SERVICE, message=error) if error else None,
    )
