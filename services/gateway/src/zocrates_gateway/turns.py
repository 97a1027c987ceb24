"""Turns as tasks: started, kept while they run (and a while after, for readers that resume),
and replayed from the events stream when they ran on another replica or before a restart.
`turn.py` is what one turn does; this is how the gateway keeps them."""

from __future__ import annotations

import asyncio
import contextlib
import json

import nats.errors
import nats.js.api
import nats.js.errors

from zocrates_contracts import new_id
from zocrates_contracts.scopes import RetrievalScope
from zocrates_contracts.subjects import EVENTS_PREFIX, EVENTS_STREAM
from zocrates_gateway.context import Gateway
from zocrates_gateway.errors import ApiError
from zocrates_gateway.events import TurnEvent, TurnLog
from zocrates_gateway.turn import run_turn

KEEP_FINISHED_S = 300.0
#: Each event on the events stream names the user whose turn it is; a replay shows no one else's.
USER_HEADER = "Zocrates-User"


def checked_message(settings, message: str) -> str:
    """The message of a turn, stripped; `ApiError` when it is empty or over the size limit."""
    message = message.strip()
    if not message:
        raise ApiError(422, "empty_message", "The message is empty.")
    if len(message.encode()) > settings.max_message_bytes:
        raise ApiError(
            413,
            "message_too_large",
            f"The message is {len(message.encode())} bytes; the limit is {settings.max_message_bytes}.",
        )
    return message


def start_turn(
    gateway: Gateway,
    user_id: str,
    session_id: str,
    message: str,
    scope: RetrievalScope | None = None,
    scope_label: str = "",
) -> TurnLog:
    """Run a turn as its own task (a client that leaves does not cancel it); each of its
    events is also published to the events stream. `scope`: where in the library to search,
    named `scope_label` as the user chose it."""
    broker = gateway.broker
    turn = TurnLog(turn_id=new_id(), user_id=user_id, session_id=session_id)

    async def publish_event(event: TurnEvent) -> None:
        headers = {"Nats-Msg-Id": f"{turn.turn_id}-{event.id}", USER_HEADER: user_id}
        await broker.publish(json.dumps(event.sse()).encode(), f"{EVENTS_PREFIX}.{turn.turn_id}", headers=headers)

    turn.on_append = publish_event
    task = asyncio.create_task(
        run_turn(gateway, turn, message, session_title=message, scope=scope, scope_label=scope_label)
    )
    gateway.turns[turn.turn_id] = (turn, task)
    task.add_done_callback(
        lambda _: asyncio.get_running_loop().call_later(KEEP_FINISHED_S, gateway.turns.pop, turn.turn_id, None)
    )
    return turn


def turn_budget_s(settings) -> float:
    """The longest a turn can run: the sum of its stage deadlines."""
    return (
        settings.retrieval_timeout_s
        + settings.discovery_timeout_s
        + settings.synthesis_timeout_s
        + settings.verification_budget_s
        + 30.0
    )


# The server deletes an ordered consumer this long after its subscriber went away: a backstop
# for a replay that could not delete its own (the gateway died, or nats-py replaced it).
REPLAY_INACTIVE_S = 2.0


async def replay(
    broker, turn_id: str, user_id: str, *, follow_for: float, first_wait: float = 10.0
) -> tuple[TurnLog, asyncio.Task] | None:
    """A turn's log rebuilt from the events stream: a finished turn (another replica, or a
    restart), or one still running elsewhere, followed live until its terminal event or its
    deadline. None when the stream has no event of this turn for this user.

    Whether the turn exists is asked of the stream (its last event), not read from how soon a
    first event arrives: on a loaded server that took over half a second, and a turn that had
    finished was answered 404.

    The returned task reads the stream; cancel it when the client leaves. However it ends
    (done, error, cancelled, deadline) it deletes its consumer, and a turn it could not
    follow to the end gets an `error` event so that its readers end too."""
    js = broker.config.connection_state.stream
    subject = f"{EVENTS_PREFIX}.{turn_id}"
    try:
        last = await js.get_last_msg(EVENTS_STREAM, subject)
    except nats.js.errors.NotFoundError:
        return None  # no such turn (or it expired from the stream)
    if (last.headers or {}).get(USER_HEADER) != user_id:
        return None
    sub = await js.subscribe(
        subject,
        ordered_consumer=True,
        deliver_policy=nats.js.api.DeliverPolicy.ALL,
        inactive_threshold=REPLAY_INACTIVE_S,
    )
    turn = TurnLog(turn_id=turn_id, user_id=user_id, session_id="")

    async def take(msg) -> bool:
        """Append one event; False when it is not this user's (then nothing is shown)."""
        if (msg.headers or {}).get(USER_HEADER) != user_id:
            return False
        item = json.loads(msg.data)
        await turn.append(item["event"], json.loads(item["data"]))
        return True

    found = False
    try:
        found = await take(await sub.next_msg(timeout=first_wait))
    except nats.errors.TimeoutError:
        pass  # the stream holds the turn but did not deliver it in time: answered as not found
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
                    await turn.append("error", {"code": "timeout", "message": "The turn did not finish in time."})
                    return
                try:
                    msg = await sub.next_msg(timeout=min(remaining, 5.0))
                except nats.errors.TimeoutError:
                    continue
                if not await take(msg):
                    break
        finally:
            if not turn.finished:
                await turn.append(
                    "error", {"code": "replay_failed", "message": "The turn's events could not be followed to its end."}
                )
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
