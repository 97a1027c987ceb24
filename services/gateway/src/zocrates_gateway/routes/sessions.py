"""`GET /sessions`, `GET /sessions/{id}` (rehydration: the stored `done` payloads), `DELETE`."""

from __future__ import annotations

from fastapi import APIRouter, Path

from zocrates_contracts import ID_PATTERN
from zocrates_gateway.adapters.sessions import dump
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import SessionsDep
from zocrates_gateway.errors import ApiError

router = APIRouter(prefix="/sessions")
SessionId = Path(pattern=ID_PATTERN, description="A session id from POST /chat's `turn` event")


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
