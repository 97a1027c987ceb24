"""`POST /chat`: one turn as a server-sent event stream.

Events: `turn`, `status`, `delta`, `done`, `error`, each with an id (1, 2, ... within the
turn) and a comment ping while idle. The turn runs as its own task: a client that goes away
does not cancel it (it finishes within its stage deadlines and is stored, so the answer is
there on reload), `GET /chat/{turn_id}/events` with `Last-Event-ID` resumes the stream, and
`POST /chat/{turn_id}/cancel` (the stop button) ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re

import nats.errors
import nats.js.api
from fastapi import APIRouter, Header, Path, Request
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse

from zocrates_contracts import ID_PATTERN, new_id
from zocrates_contracts.subjects import EVENTS_PREFIX
from zocrates_gateway.auth import CurrentUser
from zocrates_gateway.errors import ApiError
from zocrates_gateway.events import TurnEvent, TurnLog
from zocrates_gateway.turn import TurnDeps, run_turn

router = APIRouter()
LAST_EVENT_ID_RE = re.compile(r"^(0|[1-9][0-9]{0,8})$")
KEEP_FINISHED_S = 300.0
TurnId = Path(pattern=ID_PATTERN)


class ChatRequest(BaseModel):
    session_id: str | None = Field(default=None, pattern=ID_PATTERN,
                                   description="Continue this session; omit to start a new one")
    message: str = Field(min_length=1, description="The question, at most 32 KB of UTF-8")


@router.post("/chat", responses={200: {"content": {"text/event-stream": {}}}})
async def chat(request: Request, body: ChatRequest, user: CurrentUser) -> EventSourceResponse:
    settings = request.app.state.settings
    message = body.message.strip()
    if not message:
        raise ApiError(422, "empty_message", "The message is empty.")
    if len(message.encode()) > settings.max_message_bytes:
        raise ApiError(413, "message_too_large",
                       f"The message is {len(message.encode())} bytes; the limit is {settings.max_message_bytes}.")
    sessions = request.app.state.sessions
    if body.session_id is not None and await sessions.get_meta(user.user_id, body.session_id) is None:
        raise ApiError(404, "session_not_found", f"No session {body.session_id} for this user.")
    session_id = body.session_id or new_id()
    turn = start_turn(request.app, user.user_id, session_id, message)
    return sse(request, turn, after=0)


def start_turn(app, user_id: str, session_id: str, message: str) -> TurnLog:
    broker = app.state.broker
    turn = TurnLog(turn_id=new_id(), user_id=user_id, session_id=session_id)

    async def publish_event(event: TurnEvent) -> None:
        headers = {"Nats-Msg-Id": f"{turn.turn_id}-{event.id}", "Zocrates-User": user_id}
        await broker.publish(json.dumps(event.sse()).encode(), f"{EVENTS_PREFIX}.{turn.turn_id}",
                             headers=headers)

    turn.on_append = publish_event
    deps = TurnDeps(settings=app.state.settings, requester=app.state.requester, sessions=app.state.sessions)
    task = asyncio.create_task(run_turn(deps, turn, message, session_title=message))
    app.state.turns[turn.turn_id] = (turn, task)
    task.add_done_callback(lambda _: asyncio.get_running_loop().call_later(
        KEEP_FINISHED_S, app.state.turns.pop, turn.turn_id, None))
    return turn


def sse(request: Request, turn: TurnLog, after: int, on_close=None) -> EventSourceResponse:
    async def stream():
        try:
            async for event in turn.follow(after):
                yield event.sse()
        finally:
            if on_close is not None:  # the client left, or the turn ended: stop following it
                on_close()

    settings = request.app.state.settings
    return EventSourceResponse(stream(), ping=settings.keepalive_s, send_timeout=30,
                               headers={"Cache-Control": "no-store"})


def parse_last_event_id(value: str | None) -> int:
    if value is None or value == "":
        return 0
    if not LAST_EVENT_ID_RE.match(value):
        raise ApiError(400, "invalid_last_event_id",
                       "Last-Event-ID must be a non-negative decimal event id without sign or leading zeros.")
    return int(value)


@router.get("/chat/{turn_id}/events", responses={200: {"content": {"text/event-stream": {}}}})
async def resume(request: Request, user: CurrentUser, turn_id: str = TurnId,
                 last_event_id: str | None = Header(default=None)) -> EventSourceResponse:
    """Resume a turn's stream after `Last-Event-ID`, live or replayed from the events stream."""
    after = parse_last_event_id(last_event_id)
    live = request.app.state.turns.get(turn_id)
    if live is not None:
        turn = live[0]
        if turn.user_id != user.user_id:
            raise ApiError(404, "turn_not_found", f"No turn {turn_id} for this user.")
        return sse(request, turn, after)
    replayed = await replay(request.app.state.broker, turn_id, user.user_id,
                            follow_for=turn_budget_s(request.app.state.settings))
    if replayed is None:
        raise ApiError(404, "turn_not_found", f"No turn {turn_id} for this user.")
    turn, pump = replayed
    return sse(request, turn, after, on_close=pump.cancel)


def turn_budget_s(settings) -> float:
    """The longest a turn can run: the sum of its stage deadlines."""
    return (settings.retrieval_timeout_s + settings.discovery_timeout_s + settings.synthesis_timeout_s
            + settings.verification_budget_s + 30.0)


# The server deletes an ordered consumer this long after its subscriber went away: a backstop
# for a replay that could not delete its own (the gateway died, or nats-py replaced it).
REPLAY_INACTIVE_S = 2.0


async def replay(broker, turn_id: str, user_id: str, *, follow_for: float,
                 first_wait: float = 0.5) -> tuple[TurnLog, asyncio.Task] | None:
    """A turn's log rebuilt from the events stream: a finished turn (another replica, or a
    restart), or one still running elsewhere, followed live until its terminal event or its
    deadline. None when the stream has no event of this turn for this user.

    The returned task reads the stream; cancel it when the client leaves. However it ends
    (done, error, cancelled, deadline) it deletes its consumer, and a turn it could not
    follow to the end gets an `error` event so that its readers end too."""
    js = broker.config.connection_state.stream
    sub = await js.subscribe(f"{EVENTS_PREFIX}.{turn_id}", ordered_consumer=True,
                             deliver_policy=nats.js.api.DeliverPolicy.ALL,
                             inactive_threshold=REPLAY_INACTIVE_S)
    turn = TurnLog(turn_id=turn_id, user_id=user_id, session_id="")

    async def take(msg) -> bool:
        """Append one event; False when it is not this user's (then nothing is shown)."""
        if (msg.headers or {}).get("Zocrates-User") != user_id:
            return False
        item = json.loads(msg.data)
        await turn.append(item["event"], json.loads(item["data"]))
        return True

    found = False
    try:
        found = await take(await sub.next_msg(timeout=first_wait))
    except nats.errors.TimeoutError:
        pass  # no such turn (or it expired from the stream)
    finally:
        if not found:
            await delete_subscription(js, sub)
    if not found:
        return None

    async def pump() -> None:
        deadline = asyncio.get_running_loop().time() + follow_for
        try:
            while not turn.finished:
                remaining = deadline - asyncio.get_running_loop().time()
                if remaining <= 0:
                    await turn.append("error", {"code": "timeout",
                                                "message": "The turn did not finish in time."})
                    return
                try:
                    msg = await sub.next_msg(timeout=min(remaining, 5.0))
                except nats.errors.TimeoutError:
                    continue
                if not await take(msg):
                    break
        finally:
            if not turn.finished:
                await turn.append("error", {"code": "replay_failed",
                                            "message": "The turn's events could not be followed to its end."})
            # Shielded: the client may leave (and cancel this task) while it cleans up.
            await asyncio.shield(delete_subscription(js, sub))

    return turn, asyncio.create_task(pump())


async def delete_subscription(js, sub) -> None:
    """Unsubscribe and delete the ordered consumer now rather than at its inactive threshold."""
    try:
        info = await sub.consumer_info()
    except nats.errors.Error:
        info = None  # already gone (its inactive threshold), or the connection is closing
    with contextlib.suppress(nats.errors.Error):
        await sub.unsubscribe()
        if info is not None:
            await js.delete_consumer(info.stream_name, info.name)


@router.post("/chat/{turn_id}/cancel")
async def cancel(request: Request, user: CurrentUser, turn_id: str = TurnId) -> dict:
    live = request.app.state.turns.get(turn_id)
    if live is None or live[0].user_id != user.user_id:
        raise ApiError(404, "turn_not_found", f"No running turn {turn_id} for this user.")
    turn, task = live
    if not turn.finished:
        task.cancel()
    return {"cancelled": turn_id}
