"""Import of discovered papers: the ticked candidates re-checked against the user's library
(it may have changed since the search), then staging asked to download the open-access PDFs.
The route (`POST /discover/prepare_batch`) validates the request and answers what this returns."""

from __future__ import annotations

from zocrates_contracts import (
    BatchStaged,
    Candidate,
    CandidatesRechecked,
    RecheckRequested,
    StagedFile,
    StagingRequested,
    new_id,
)
from zocrates_gateway.context import Gateway
from zocrates_gateway.errors import ApiError
from zocrates_runtime import bus

RECHECK_TIMEOUT_S = 10.0


async def prepare_batch(gateway: Gateway, user_id: str, session_id: str, chosen: list[Candidate]) -> dict:
    """The staged batch: its id, one file per candidate (staged, failed, or already owned) and
    notes. A re-check that fails only adds a note; staging that fails is an error."""
    ids = dict(turn_id=new_id(), session_id=session_id, user_id=user_id)
    notes, owned = [], []
    try:
        rechecked: CandidatesRechecked = await gateway.requester.ask(
            RecheckRequested, RECHECK_TIMEOUT_S, **ids, candidates=chosen
        )
        if rechecked.error is None:
            owned = list(rechecked.dropped)
            chosen = list(rechecked.candidates)
        else:
            notes.append(f"Not re-checked against your library: {rechecked.error.message}")
    except bus.NoReply:
        notes.append("Not re-checked against your library: the discovery service did not answer.")

    files = [
        StagedFile(
            candidate_id=d.candidate.candidate_id, status="duplicate", reason=f"already in your library ({d.reason})"
        )
        for d in owned
    ]
    batch_id = new_id()
    if chosen:
        timeout = gateway.settings.staging_timeout_s
        try:
            staged: BatchStaged = await gateway.requester.ask(
                StagingRequested, timeout, **ids, batch_id=batch_id, candidates=chosen
            )
        except bus.NoReply:
            raise ApiError(
                504, "staging_timeout", f"The staging service did not finish within {timeout:.0f} s; try fewer papers."
            ) from None
        if staged.error is not None:
            raise ApiError(502, f"staging_{staged.error.code}", staged.error.message)
        files = list(staged.files) + files
    return {"batch_id": batch_id, "files": [f.model_dump(mode="json") for f in files], "notes": notes}
