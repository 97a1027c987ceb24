"""`POST /chat`: one turn as a server-sent event stream.

Events: `turn`, `status`, `delta`, `done`, `error`, each with an id (1, 2, ... within the
turn) and a comment ping while idle. The turn runs as its own task: a client that goes away
does not cancel it (it finishes within its stage deadlines and is stored, so the answer is
there on reload), `GET /chat/{turn_id}/events` with `Last-Event-ID` resumes the stream, and
`POST /chat/{turn_id}/cancel` (the stop button) ends it.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Header, Path
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse

from zocrates_contracts import ID_PATTERN, new_id
from zocrates_contracts.scopes import RetrievalScope
from zocrates_contracts.turns import MAX_SCOPE_LABEL_CHARS
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.deps import GatewayDep
from zocrates_gateway.errors import ApiError
from zocrates_gateway.events import TurnLog
from zocrates_gateway.turns import checked_message, replay, start_turn, turn_budget_s

router = APIRouter()
LAST_EVENT_ID_RE = re.compile(r"^(0|[1-9][0-9]{0,8})$")
TurnId = Path(pattern=ID_PATTERN)


class ChatRequest(BaseModel):
    session_id: str | None = Field(
        default=None, pattern=ID_PATTERN, description="Continue this session; omit to start a new one"
    )
    message: str = Field(min_length=1, description="The question, at most 32 KB of UTF-8")
    scope: RetrievalScope | None = Field(
        default=None,
        description=(
            "Where in your library to search: a library, a collection (with or without its "
            "subcollections), a tag, a set of items or one attachment; omit for the whole library"
        ),
    )
    scope_label: str = Field(
        default="",
        max_length=MAX_SCOPE_LABEL_CHARS,
        description="The scope as the user chose it (\"Collection: Thrombosis\"), kept with the turn; "
        "omitted, the server names it from the scope",
    )


@router.post("/chat", responses={200: {"content": {"text/event-stream": {}}}})
async def chat(gateway: GatewayDep, body: ChatRequest, user: CurrentUser) -> EventSourceResponse:
    message = checked_message(gateway.settings, body.message)
    if body.session_id is not None and await gateway.sessions.get_meta(user.user_id, body.session_id) is None:
        raise ApiError(404, "session_not_found", f"No session {body.session_id} for this user.")
    session_id = body.session_id or new_id()
    turn = start_turn(gateway, user.user_id, session_id, message, body.scope, body.scope_label)
    return sse(gateway, turn, after=0)


def sse(gateway, turn: TurnLog, after: int, on_close=None) -> EventSourceResponse:
    async def stream():
        try:
            async for event in turn.follow(after):
                yield event.sse()
        finally:
            if on_close is not None:  # the client left, or the turn ended: stop following it
                on_close()

    return EventSourceResponse(
        stream(), ping=gateway.settings.keepalive_s, send_timeout=30, headers={"Cache-Control": "no-store"}
    )


def parse_last_event_id(value: str | None) -> int:
    if value is None or value == "":
        return 0
    if not LAST_EVENT_ID_RE.match(value):
        raise ApiError(
            400,
            "invalid_last_event_id",
            "Last-Event-ID must be a non-negative decimal event id without sign or leading zeros.",
        )
    return int(value)


@router.get("/chat/{turn_id}/events", responses={200: {"content": {"text/event-stream": {}}}})
async def resume(
    gateway: GatewayDep, user: CurrentUser, turn_id: str = TurnId, last_event_id: str | None = Header(default=None)
) -> EventSourceResponse:
    """Resume a turn's stream after `Last-Event-ID`, live or replayed from the events stream."""
    after = parse_last_event_id(last_event_id)
    live = gateway.turns.get(turn_id)
    if live is not None:
        turn = live[0]
        if turn.user_id != user.user_id:
            raise ApiError(404, "turn_not_found", f"No turn {turn_id} for this user.")
        return sse(gateway, turn, after)
    replayed = await replay(gateway.broker, turn_id, user.user_id, follow_for=turn_budget_s(gateway.settings))
    if replayed is None:
        raise ApiError(404, "turn_not_found", f"No turn {turn_id} for this user.")
    turn, pump = replayed
    return sse(gateway, turn, after, on_close=pump.cancel)


@router.post("/chat/{turn_id}/cancel")
async def cancel(gateway: GatewayDep, user: CurrentUser, turn_id: str = TurnId) -> dict:
    live = gateway.turns.get(turn_id)
    if live is None or live[0].user_id != user.user_id:
        raise ApiError(404, "turn_not_found", f"No running turn {turn_id} for this user.")
    turn, task = live
    if not turn.finished:
        task.cancel()
    return {"cancelled": turn_id}
