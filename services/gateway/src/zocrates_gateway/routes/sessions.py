"""`GET /sessions`, `GET /sessions/{id}` (rehydration: the stored `done` payloads), `DELETE`,
and `GET /sessions/{id}/turns/{turn_id}/export` (an answer for a manuscript)."""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import Response

from zocrates_citations import export_answer
from zocrates_citations.unsupported import prose_as_chosen
from zocrates_contracts import ID_PATTERN
from zocrates_gateway.adapters.sessions import dump
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import SessionsDep
from zocrates_gateway.errors import ApiError

router = APIRouter(prefix="/sessions")
SessionId = Path(pattern=ID_PATTERN, description="A session id from POST /chat's `turn` event")
TurnId = Path(pattern=ID_PATTERN, description="A turn id of the session")
#: Each single-file format of an export: its media type and file name.
EXPORT_FILES = {
    "markdown": ("text/markdown; charset=utf-8", "answer.md"),
    "bibtex": ("application/x-bibtex; charset=utf-8", "references.bib"),
    "csljson": ("application/vnd.citationstyles.csl+json", "references.json"),
}


def _not_found(session_id: str) -> ApiError:
    # The same answer for "does not exist" and "belongs to someone else".
    return ApiError(404, "session_not_found", f"No session {session_id} for this user.")


@router.get("")
async def list_sessions(store: SessionsDep, user: CurrentUser) -> dict:
    metas = await store.list(user.user_id)
    return {"sessions": [dump(m) | {"turns": len(m.turn_ids)} for m in metas]}


@router.get("/{session_id}")
async def get_session(store: SessionsDep, user: CurrentUser, session_id: str = SessionId) -> dict:
    meta = await store.get_meta(user.user_id, session_id)
    if meta is None:
        raise _not_found(session_id)
    turns = await store.turns(user.user_id, meta)
    return dump(meta) | {"turns": [t.model_dump(mode="json") for t in turns]}


@router.delete("/{session_id}")
async def delete_session(store: SessionsDep, user: CurrentUser, session_id: str = SessionId) -> dict:
    if not await store.delete(user.user_id, session_id):
        raise _not_found(session_id)
    return {"deleted": session_id}


@router.get("/{session_id}/turns/{turn_id}/export")
async def export_turn(
    store: SessionsDep,
    user: CurrentUser,
    session_id: str = SessionId,
    turn_id: str = TurnId,
    format: Literal["json", "markdown", "bibtex", "csljson"] = Query(
        default="json", description="`json`: all three at once; else that one file, as a download"
    ),
):
    """The answer with Pandoc citations (`[@key]`: the item's Better BibTeX key, else a generated
    one) and the cited items as BibTeX and CSL-JSON (`zocrates_citations.export`); its unsupported
    claims marked, removed or left as the user chose (`GET /settings`)."""
    record = await store.get_turn(user.user_id, session_id, turn_id)
    if record is None:
        raise ApiError(404, "turn_not_found", f"No turn {turn_id} in session {session_id} for this user.")
    audit, chosen = await asyncio.gather(
        store.get_audit(user.user_id, session_id, turn_id), store.get_settings(user.user_id)
    )
    pinned = {c.chunk_id: c.citation_key for c in (audit.chunks if audit else []) if c.citation_key}
    keys = {(c.library_id, c.item_key): pinned[c.chunk_id] for c in record.citations if c.chunk_id in pinned}
    prose = prose_as_chosen(record.prose, record.unsupported, chosen.unsupported_claims)
    exported = export_answer(prose, record.citations, keys)
    if format == "json":
        return {"markdown": exported.markdown, "bibtex": exported.bibtex, "csl_json": exported.csl_json}
    body = {"markdown": exported.markdown, "bibtex": exported.bibtex, "csljson": exported.csl_json_text()}[format]
    media_type, filename = EXPORT_FILES[format]
    return Response(body, media_type=media_type, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
