"""Import of discovered papers: `POST /discover/prepare_batch` and `GET /staging/{id}`.

The plugin ticks candidates of a discovery turn; the gateway re-checks them against the
user's library (it may have changed since the search), asks staging to download the
open-access PDFs, and returns the manifest. The plugin then pulls each staged PDF.
"""

from __future__ import annotations

import tempfile

from fastapi import APIRouter, Path
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from zocrates_contracts import ID_PATTERN
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import GatewayDep
from zocrates_gateway.errors import ApiError
from zocrates_gateway.importing import prepare_batch as prepare
from zocrates_runtime.staged_store import StagedIntegrityError

router = APIRouter()


class PrepareBatch(BaseModel):
    session_id: str = Field(pattern=ID_PATTERN)
    turn_id: str = Field(pattern=ID_PATTERN)
    candidate_ids: list[str] = Field(min_length=1, max_length=50, description="Ticked candidates")


@router.post("/discover/prepare_batch")
async def prepare_batch(gateway: GatewayDep, body: PrepareBatch, user: CurrentUser) -> dict:
    """Stage the ticked candidates of a discovery turn (see `importing`)."""
    record = await gateway.sessions.get_turn(user.user_id, body.session_id, body.turn_id)
    if record is None or record.intent != "discovery":
        raise ApiError(404, "turn_not_found", f"No discovery turn {body.turn_id} in session {body.session_id}.")
    offered = {c.candidate_id: c for c in record.candidates}
    unknown = [i for i in body.candidate_ids if i not in offered]
    if unknown:
        raise ApiError(422, "unknown_candidates", f"Not candidates of this turn: {', '.join(unknown[:5])}.")
    chosen = [offered[i] for i in dict.fromkeys(body.candidate_ids)]
    return await prepare(gateway, user.user_id, body.session_id, chosen)


@router.get("/staging/{staged_id}", responses={200: {"content": {"application/pdf": {}}}})
async def staged_pdf(
    gateway: GatewayDep, user: CurrentUser, staged_id: str = Path(pattern=ID_PATTERN)
) -> StreamingResponse:
    """A staged PDF, to its owner only (anyone else, or an expired id: 404)."""
    spool = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # big PDFs spill to disk
    try:
        info = await gateway.staged.read_into(user.user_id, staged_id, spool)
    except StagedIntegrityError:
        spool.close()
        raise ApiError(
            500, "staged_file_corrupt", "The staged file failed its integrity check; stage it again."
        ) from None
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
    return StreamingResponse(
        chunks(),
        media_type="application/pdf",
        headers={
            "Content-Length": str(info.size),
            "Content-Disposition": f'attachment; filename="{filename}"',
            "X-Content-SHA256": info.sha256,
        },
    )
