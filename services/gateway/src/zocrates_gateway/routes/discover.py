"""Import of discovered papers: `POST /discover/prepare_batch` and `GET /staging/{id}`.

The plugin ticks candidates of a discovery turn; the gateway re-checks them against the
user's library (it may have changed since the search), asks staging to download the
open-access PDFs, and returns the manifest. The plugin then pulls each staged PDF.
"""

from __future__ import annotations

import tempfile

from fastapi import APIRouter, Path, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from zocrates_contracts import (
    ID_PATTERN,
    BatchStaged,
    Candidate,
    CandidatesRechecked,
    RecheckRequested,
    StagedFile,
    StagingRequested,
    new_id,
)
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.errors import ApiError
from zocrates_gateway.turn import deadline_in
from zocrates_runtime.staged_store import StagedIntegrityError

router = APIRouter()
RECHECK_TIMEOUT_S = 10.0


class PrepareBatch(BaseModel):
    session_id: str = Field(pattern=ID_PATTERN)
    turn_id: str = Field(pattern=ID_PATTERN)
    candidate_ids: list[str] = Field(min_length=1, max_length=50, description="Ticked candidates")


@router.post("/discover/prepare_batch")
async def prepare_batch(request: Request, body: PrepareBatch, user: CurrentUser) -> dict:
    state = request.app.state
    record = await state.sessions.get_turn(user.user_id, body.session_id, body.turn_id)
    if record is None or record.intent != "discovery":
        raise ApiError(404, "turn_not_found", f"No discovery turn {body.turn_id} in session {body.session_id}.")
    offered = {c["candidate_id"]: Candidate.model_validate(c) for c in record.candidates}
    unknown = [i for i in body.candidate_ids if i not in offered]
    if unknown:
        raise ApiError(422, "unknown_candidates", f"Not candidates of this turn: {', '.join(unknown[:5])}.")
    chosen = [offered[i] for i in dict.fromkeys(body.candidate_ids)]
    ids = dict(turn_id=new_id(), session_id=body.session_id, user_id=user.user_id)

    notes, owned = [], []
    try:
        rechecked: CandidatesRechecked = await state.requester.request(RecheckRequested(
            **ids, candidates=chosen, reply_to=state.requester.reply_to(RecheckRequested),
            deadline=deadline_in(RECHECK_TIMEOUT_S)), timeout=RECHECK_TIMEOUT_S)
        if rechecked.error is None:
            owned = list(rechecked.dropped)
            chosen = list(rechecked.candidates)
        else:
            notes.append(f"Not re-checked against your library: {rechecked.error.message}")
    except TimeoutError:
        notes.append("Not re-checked against your library: the discovery service did not answer.")

    files = [StagedFile(candidate_id=d.candidate.candidate_id, status="duplicate",
                        reason=f"already in your library ({d.reason})") for d in owned]
    batch_id = new_id()
    if chosen:
        timeout = state.settings.staging_timeout_s
        try:
            staged: BatchStaged = await state.requester.request(StagingRequested(
                **ids, batch_id=batch_id, candidates=chosen, deadline=deadline_in(timeout),
                reply_to=state.requester.reply_to(StagingRequested)), timeout=timeout)
        except TimeoutError:
            raise ApiError(504, "staging_timeout",
                           f"The staging service did not finish within {timeout:.0f} s; try fewer papers.") from None
        if staged.error is not None:
            raise ApiError(502, f"staging_{staged.error.code}", staged.error.message)
        files = list(staged.files) + files
    return {"batch_id": batch_id, "files": [f.model_dump(mode="json") for f in files], "notes": notes}


@router.get("/staging/{staged_id}", responses={200: {"content": {"application/pdf": {}}}})
async def staged_pdf(request: Request, user: CurrentUser,
                     staged_id: str = Path(pattern=ID_PATTERN)) -> StreamingResponse:
    """A staged PDF, to its owner only (anyone else, or an expired id: 404)."""
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # big PDFs spill to disk
    try:
        info = await request.app.state.staged.read_into(user.user_id, staged_id, spool)
    except StagedIntegrityError:
        spool.close()
        raise ApiError(500, "staged_file_corrupt", "The staged file failed its integrity check; stage it again.") from None
    if info is None:
        spool.close()
        raise ApiError(404, "staged_file_not_found", f"No staged file {staged_id} for this user (it may have expired).")
    spool.seek(0)

    def chunks():
        try:
            while block := spool.read(256 * 1024):
                yield block
        finally:
            spool.close()

    filename = info.meta.get("filename", f"{staged_id}.pdf").replace('"', "")
    return StreamingResponse(chunks(), media_type="application/pdf", headers={
        "Content-Length": str(info.size), "Content-Disposition": f'attachment; filename="{filename}"',
        "X-Content-SHA256": info.sha256})
