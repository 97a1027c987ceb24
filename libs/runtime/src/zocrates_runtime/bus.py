"""The bus, written once: broker, streams, request consumers with explicit acks, replies.

Delivery rules (see shared/RELIABILITY.md, measured there):
- Every request consumer is a durable pull consumer on the audit stream, shared by all
  replicas of a service (queue semantics), with `AckPolicy.MANUAL`: faststream's default
  terminates a message whose handler raised, and the message is lost.
- A handler's result is published *before* the ack, with a `Nats-Msg-Id` derived from the
  request's id, so a redelivery after a crash republishes a duplicate the stream drops.
- `TransientError` naks with a delay (a plain nak redelivers at once and burns MaxDeliver in
  milliseconds). Any other exception is retried the same way until the last delivery.
- A payload that fails validation is poison: it is copied to the dead-letter stream with the
  reason, then terminated. So is a message on its last delivery that still fails; the
  requester then gets an `internal` error reply instead of waiting for its deadline.
- Long handlers send in-progress heartbeats so AckWait does not expire under them.
- Each pull request asks for one message (`FETCH_BATCH`): a batched fetch can be left
  waiting for the rest of its batch and hold a request for seconds on an idle consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import nats.js.errors
import structlog
from faststream import AckPolicy
from faststream.nats import ConsumerConfig, DeliverPolicy, JStream, NatsBroker, PullSub
from faststream.nats.annotations import NatsMessage
from nats.js.api import StreamConfig
from pydantic import ValidationError

from zocrates_contracts import REPLY_OF, Message, Request, ServiceError
from zocrates_contracts.subjects import (
    AUDIT_STREAM,
    AUDIT_SUBJECTS,
    DLQ_PREFIX,
    DLQ_STREAM,
    DLQ_SUBJECTS,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
)
from zocrates_runtime.settings import ZocratesSettings

log = structlog.get_logger("zocrates.bus")

DUPLICATE_WINDOW_S = 120.0
AUDIT_MAX_AGE_S = 30 * 24 * 3600.0
EVENTS_MAX_AGE_S = 24 * 3600.0

STREAM_CONFIGS: tuple[StreamConfig, ...] = (
    StreamConfig(
        name=AUDIT_STREAM,
        subjects=AUDIT_SUBJECTS,
        max_age=AUDIT_MAX_AGE_S,
        duplicate_window=DUPLICATE_WINDOW_S,
        max_msg_size=1024 * 1024,
    ),
    StreamConfig(name=DLQ_STREAM, subjects=DLQ_SUBJECTS, max_age=AUDIT_MAX_AGE_S, duplicate_window=DUPLICATE_WINDOW_S),
    StreamConfig(
        name=EVENTS_STREAM, subjects=EVENTS_SUBJECTS, max_age=EVENTS_MAX_AGE_S, duplicate_window=DUPLICATE_WINDOW_S
    ),
)

#: faststream's view of the audit stream; `declare=False` because `ensure_streams` owns it.
AUDIT = JStream(name=AUDIT_STREAM, declare=False)

M = TypeVar("M", bound=Message)
R = TypeVar("R", bound=Request)


class TransientError(Exception):
    """A failure worth retrying later (a dependency is briefly down); naks with `delay`."""

    def __init__(self, message: str, delay: float = 1.0) -> None:
        super().__init__(message)
        self.delay = delay


def make_broker(settings: ZocratesSettings, **kwargs: Any) -> NatsBroker:
    """A broker for `settings.nats_url` with credentials and trace propagation in headers."""
    from faststream.nats.opentelemetry import NatsTelemetryMiddleware
    from faststream.security import SASLPlaintext

    auth: dict[str, Any] = {}
    if settings.nats_creds_file:
        auth["user_credentials"] = str(settings.nats_creds_file)
    if settings.nats_user:
        password = settings.nats_password.get_secret_value() if settings.nats_password else ""
        auth["security"] = SASLPlaintext(username=settings.nats_user, password=password)
    servers = [s.strip() for s in settings.nats_url.split(",") if s.strip()]
    return NatsBroker(
        servers,
        middlewares=[NatsTelemetryMiddleware()],
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
        log_level=logging.DEBUG,  # per-message access lines; our own logs carry the turn
        **auth,
        **kwargs,
    )


async def ensure_streams(broker: NatsBroker, replicas: int = 1) -> None:
    """Declare the streams idempotently: create, or update a drifted config in place."""
    import dataclasses

    js = broker.config.connection_state.stream
    for config in STREAM_CONFIGS:
        config = dataclasses.replace(config, num_replicas=replicas)
        try:
            await js.add_stream(config)
        except nats.js.errors.BadRequestError:
            # Exists with another config (e.g. after an upgrade): converge to ours.
            await js.update_stream(config)


async def ensure_ack_waits(broker: NatsBroker) -> None:
    """Give each existing durable consumer of `broker` the AckWait its subscriber asks for now.

    nats-py binds to a durable that exists without comparing configs, so a changed `ack_wait`
    would otherwise reach new deployments only. Call before the subscribers start."""
    import dataclasses

    js = broker.config.connection_state.stream
    for subscriber in broker.subscribers:
        wanted = getattr(subscriber, "config", None)
        stream = getattr(subscriber, "stream", None)
        if stream is None or not getattr(wanted, "durable_name", None) or wanted.ack_wait is None:
            continue
        try:
            current = (await js.consumer_info(stream.name, wanted.durable_name)).config
        except nats.js.errors.NotFoundError:
            continue  # the subscriber creates it with `wanted`
        if current.ack_wait != wanted.ack_wait:
            await js.add_consumer(stream.name, dataclasses.replace(current, ack_wait=wanted.ack_wait))
            log.info(
                "consumer AckWait updated", consumer=wanted.durable_name, was=current.ack_wait, now=wanted.ack_wait
            )


def message_headers(message: Message) -> dict[str, str]:
    headers = {"Nats-Msg-Id": message.message_id, "Zocrates-Schema": str(message.schema_version)}
    if message.trace.traceparent:
        headers["traceparent"] = message.trace.traceparent
    if message.trace.tracestate:
        headers["tracestate"] = message.trace.tracestate
    return headers


#: How long a publish keeps retrying: a stream leader election on a NATS cluster takes
#: 5-11 s (measured in tests/deploy/test_cluster.py); callers' own deadlines cut it shorter.
PUBLISH_RETRY_S = 15.0
#: How long a key-value read waits out a lost NATS node (a KV stream elects a new leader in 5-11 s).
READ_RETRY_S = 12.0


async def publish(
    broker: NatsBroker, message: Message, subject: str | None = None, *, retry_for: float = PUBLISH_RETRY_S
) -> Any:
    """Publish to JetStream and wait for the PubAck.

    Retried with the same message id (so the stream keeps one copy) and a growing backoff
    for up to `retry_for` seconds: through a reconnect or a stream leader election.
    """
    target = subject or message.SUBJECT
    payload = message.model_dump_json().encode()
    headers = message_headers(message)
    return await retrying(
        lambda: broker.publish(payload, target, headers=headers, stream=AUDIT_STREAM, timeout=2.0),
        retry_for=retry_for,
        what=f"publish to {target}",
    )


#: What a JetStream call raises while the server reconnects or a stream elects a leader
#: (ValueError: an empty PubAck body fails to decode as JSON).
RETRYABLE = (TimeoutError, nats.errors.Error, ValueError)


async def retrying(
    call: Callable[[], Awaitable[Any]], *, retry_for: float = PUBLISH_RETRY_S, what: str = "JetStream call"
) -> Any:
    """Run an idempotent JetStream call, retrying with a growing backoff for `retry_for` s."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + retry_for
    delay = 0.05
    attempt = 0
    while True:
        attempt += 1
        try:
            return await call()
        except (nats.js.errors.BadRequestError, nats.js.errors.NotFoundError):
            raise  # an answer (wrong revision, no such key), not an outage
        except RETRYABLE as exc:
            if loop.time() + delay > give_up:
                raise
            log.warning("retrying", what=what, attempt=attempt, error=repr(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)


async def dead_letter(broker: NatsBroker, msg: NatsMessage, reason: str) -> None:
    """Copy a message to the dead-letter stream with why, before it is terminated."""
    raw = msg.raw_message
    meta = _metadata(msg)
    seq = meta.sequence.stream if meta else 0
    headers = {
        "Nats-Msg-Id": f"dlq-{raw.subject}-{seq}",
        "Zocrates-Dlq-Reason": reason[:500].replace("\n", " "),
        "Zocrates-Original-Subject": raw.subject,
        "Zocrates-Stream-Seq": str(seq),
    }
    await broker.publish(msg.body, f"{DLQ_PREFIX}.{raw.subject}", headers=headers, stream=DLQ_STREAM, timeout=2.0)
    log.error("dead-lettered", subject=raw.subject, stream_seq=seq, reason=reason)


Handler = Callable[[R], Awaitable[Message | None]]

#: How long one pull request of an idle request consumer waits before it is renewed; also how
#: soon a consumer notices that a restarted server lost its pull request.
FETCH_TIMEOUT_S = 5.0
#: Messages per pull request: one. nats-py's batched fetch (`fetch(batch>1)`) can leave a pull
#: behind on the server: when a pull's expiry (a 408) arrives just after the client's own timer
#: fired, the next fetch takes it for the answer to its no-wait probe and sends a second pull for
#: the whole batch, which outlives it (nats-io/nats.py#986). The next message goes to that
#: leftover pull, the oldest, and the fetch then waits for the rest of a batch until a timeout:
#: 3 of 40 turns on an idle stack waited 1.4 to 3.8 s (docs/benchmarks.md). A fetch of one returns
#: whatever message reaches the subscription, whichever pull brought it; `max_workers` handlers
#: still run at once (faststream hands each fetched message to a free worker and fetches the next).
FETCH_BATCH = 1


def _metadata(msg: NatsMessage):
    """JetStream delivery metadata, or None for a core message (the in-memory test broker)."""
    try:
        return msg.raw_message.metadata
    except (nats.errors.NotJSMessageError, AttributeError):
        return None


def request_consumer(
    broker: NatsBroker,
    request_cls: type[R],
    *,
    durable: str,
    max_workers: int = 4,
    ack_wait: float = 30.0,
    max_deliver: int = 5,
    retry_delay: float = 1.0,
    service: str = "",
) -> Callable[[Handler[R]], Handler[R]]:
    """Register `handler(request) -> reply` as the durable queue consumer of `request_cls`.

    The reply (if any) is published to `request.reply_to`. A request whose deadline has
    passed is acked and dropped unprocessed: its requester has already moved on. A message
    that asks for nothing back (an event such as `TurnResolved`) is consumed the same way, by
    a handler that returns None.
    """

    def decorator(handler: Handler[R]) -> Handler[R]:
        @broker.subscriber(
            request_cls.SUBJECT,
            stream=AUDIT,
            durable=durable,
            pull_sub=PullSub(batch_size=FETCH_BATCH, timeout=FETCH_TIMEOUT_S),
            max_workers=max_workers,
            deliver_policy=DeliverPolicy.NEW,
            config=ConsumerConfig(
                ack_wait=ack_wait, max_deliver=max_deliver, max_ack_pending=max(64, max_workers * 16)
            ),
            ack_policy=AckPolicy.MANUAL,
            title=f"{durable}:{request_cls.__name__}",
            description=(handler.__doc__ or "").strip(),
        )
        async def consume(msg: NatsMessage) -> None:
            await _consume(
                broker,
                msg,
                request_cls,
                handler,
                ack_wait=ack_wait,
                max_deliver=max_deliver,
                retry_delay=retry_delay,
                service=service,
            )

        # A message whose every delivery timed out (the worker crashed or hung each time)
        # stays in the stream with only an advisory to say so: dead-letter it from there.
        @broker.subscriber(
            f"{MAX_DELIVERIES_ADVISORY}.{AUDIT_STREAM}.{durable}",
            queue=f"{durable}-advisories",
            ack_policy=AckPolicy.MANUAL,
            title=f"{durable}:max-deliveries",
        )
        async def exhausted(msg: NatsMessage) -> None:
            await _dead_letter_exhausted(broker, msg, request_cls, service)

        return handler

    return decorator


@dataclass(frozen=True)
class Answer:
    """How a service answers one request type: through the durable consumer `durable`, with the
    service's method named `method` (looked up for each request, so a stand-in service needs only
    the methods its requests reach), and `request_consumer`'s limits."""

    durable: str
    method: str
    max_workers: int = 4
    ack_wait: float = 30.0


def answer_requests(broker: NatsBroker, name: str, service: object, answers: Mapping[type[Message], Answer]) -> None:
    """Register, for each request type in `answers`, its `request_consumer` calling that
    answer's method of `service` (`name` is the service's name in logs and dead letters); an
    event type's method returns None."""
    for request_cls, answer in answers.items():
        request_consumer(
            broker,
            request_cls,
            durable=answer.durable,
            max_workers=answer.max_workers,
            ack_wait=answer.ack_wait,
            service=name,
        )(_calling(service, answer.method))


def _calling(service: object, method: str) -> Handler:
    async def handler(request: Request) -> Message | None:
        return await getattr(service, method)(request)

    answering = getattr(service, method, None)
    handler.__doc__ = inspect.getdoc(answering) if answering else None  # the consumer's description
    return handler


async def _consume(
    broker: NatsBroker,
    msg: NatsMessage,
    request_cls: type[R],
    handler: Handler[R],
    *,
    ack_wait: float,
    max_deliver: int,
    retry_delay: float,
    service: str,
) -> None:
    try:
        request = request_cls.model_validate_json(msg.body)
    except ValidationError as exc:
        await dead_letter(broker, msg, f"invalid {request_cls.__name__}: {exc.errors()[:3]}")
        await msg.reject()
        return
    structlog.contextvars.bind_contextvars(
        turn_id=request.turn_id, session_id=request.session_id, message_id=request.message_id, subject=request.SUBJECT
    )
    try:
        deadline = getattr(request, "deadline", None)  # an event has none
        if deadline and deadline < datetime.now(UTC):
            log.info("request expired before processing; dropped")
            await msg.ack()
            return
        delivered = _metadata(msg).num_delivered if _metadata(msg) else 1
        heartbeat = asyncio.create_task(_heartbeat(msg, ack_wait))
        try:
            reply = await handler(request)
        except TransientError as exc:
            await _retry_or_give_up(broker, msg, request, exc, exc.delay, delivered, max_deliver, service)
            return
        except Exception as exc:  # noqa: BLE001 - any handler bug is retried, then dead-lettered
            log.exception("handler failed", delivered=delivered)
            await _retry_or_give_up(broker, msg, request, exc, retry_delay, delivered, max_deliver, service)
            return
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        if reply is not None:
            try:
                await publish(broker, reply, request.reply_to, retry_for=min(ack_wait / 2, 5.0))
            except Exception as exc:  # noqa: BLE001 - the bus is unwell: retry soon, not after AckWait
                log.warning("reply not published; redelivering soon", error=repr(exc))
                await msg.nack(delay=retry_delay)
                return
        await msg.ack()
    finally:
        structlog.contextvars.unbind_contextvars("turn_id", "session_id", "message_id", "subject")


async def _retry_or_give_up(
    broker: NatsBroker,
    msg: NatsMessage,
    request: Request,
    exc: Exception,
    delay: float,
    delivered: int,
    max_deliver: int,
    service: str,
) -> None:
    if delivered < max_deliver:
        await msg.nack(delay=delay)
        return
    await dead_letter(broker, msg, f"failed {delivered} deliveries: {exc!r}")
    reply = error_reply(
        request, ServiceError(code="internal", service=service, message=f"{service or 'service'} failed: {exc}")
    )
    if reply is not None:
        with contextlib.suppress(Exception):
            await publish(broker, reply, request.reply_to)
    await msg.reject()


MAX_DELIVERIES_ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"


async def _dead_letter_exhausted(
    broker: NatsBroker, advisory: NatsMessage, request_cls: type[Request], service: str
) -> None:
    import json

    info = json.loads(advisory.body)
    js = broker.config.connection_state.stream
    try:
        original = await js.get_msg(info["stream"], info["stream_seq"])
    except nats.errors.Error:
        log.error("max deliveries exceeded; message already gone", **info)
        return
    reason = f"no ack after {info.get('deliveries', '?')} deliveries (the worker crashed or hung each time)"
    headers = {
        "Nats-Msg-Id": f"dlq-{original.subject}-{info['stream_seq']}",
        "Zocrates-Dlq-Reason": reason,
        "Zocrates-Original-Subject": original.subject,
        "Zocrates-Stream-Seq": str(info["stream_seq"]),
    }
    await broker.publish(
        original.data, f"{DLQ_PREFIX}.{original.subject}", headers=headers, stream=DLQ_STREAM, timeout=2.0
    )
    log.error("dead-lettered", subject=original.subject, stream_seq=info["stream_seq"], reason=reason)
    try:
        request = request_cls.model_validate_json(original.data)
    except ValidationError:
        return
    reply = error_reply(
        request,
        ServiceError(
            code="internal", service=service, message=f"{service or 'service'} could not process the request: {reason}"
        ),
    )
    if reply is not None:
        with contextlib.suppress(Exception):
            await publish(broker, reply, request.reply_to)


def error_reply(request: Request, error: ServiceError) -> Message | None:
    """The reply `request` would get, carrying `error` instead of a result."""
    reply_cls = REPLY_OF.get(type(request))
    if reply_cls is None:
        return None
    extra = {"batch_id": request.batch_id} if hasattr(request, "batch_id") else {}
    return reply_cls(**request.reply_fields(), **extra, error=error)


async def _heartbeat(msg: NatsMessage, ack_wait: float) -> None:
    while True:
        await asyncio.sleep(max(ack_wait / 3, 0.5))
        with contextlib.suppress(Exception):
            await msg.in_progress()


class NoReply(TimeoutError):
    """No reply to a request within its timeout: the service is down, overloaded or slow."""

    def __init__(self, request_cls: type[Request], timeout: float) -> None:
        self.request_cls, self.timeout = request_cls, timeout
        super().__init__(f"no reply to {request_cls.__name__} within {timeout:.0f} s")


class MalformedReply(Exception):
    """A reply that does not validate as its contract (another build, or a broken service)."""


class Requester:
    """Sends requests over JetStream and awaits their replies on this replica's subject.

    Replies are matched to waiting callers by the reply's message id, which is derived from
    the request's; a duplicate or late reply finds nobody waiting and is dropped.
    """

    def __init__(self, broker: NatsBroker, instance_id: str) -> None:
        from zocrates_contracts.subjects import reply_wildcard

        self.broker = broker
        self.instance_id = instance_id
        self._pending: dict[str, tuple[asyncio.Future[Message], type[Message]]] = {}

        @broker.subscriber(reply_wildcard(instance_id), ack_policy=AckPolicy.MANUAL, title=f"replies:{instance_id}")
        async def on_reply(msg: NatsMessage) -> None:
            waiting = self._pending.get((msg.headers or {}).get("Nats-Msg-Id", ""))
            if waiting is None or waiting[0].done():
                return
            future, reply_cls = waiting
            try:
                future.set_result(reply_cls.model_validate_json(msg.body))
            except ValidationError as exc:
                future.set_exception(
                    MalformedReply(f"{reply_cls.__name__} failed validation: {exc.error_count()} errors")
                )

    def reply_to(self, request_cls: type[Request]) -> str:
        from zocrates_contracts.subjects import reply_subject

        return reply_subject(self.instance_id, REPLY_OF[request_cls].SUBJECT)

    async def ask(self, request_cls: type[Request], timeout: float, **fields: Any) -> Message:
        """Send a `request_cls` request built from `fields`, with this replica's reply subject
        and a deadline `timeout` seconds from now, and return its reply (which may carry the
        service's `error`). `NoReply` when none came in time."""
        request = request_cls(
            **fields, reply_to=self.reply_to(request_cls), deadline=datetime.now(UTC) + timedelta(seconds=timeout)
        )
        try:
            return await self.request(request, timeout)
        except TimeoutError:
            raise NoReply(request_cls, timeout) from None

    async def request(self, request: Request, timeout: float) -> Message:
        """Publish `request` and return its reply; `TimeoutError` after `timeout` seconds."""
        reply_cls = REPLY_OF[type(request)]
        expected = request.reply_fields()["message_id"]
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[expected] = (future, reply_cls)
        try:
            async with asyncio.timeout(timeout):
                await publish(self.broker, request)
                return await future
        finally:
            self._pending.pop(expected, None)


def health_responder(broker: NatsBroker, service: str, status: Callable[[], dict], instance_id: str) -> None:
    """Answer `health.<service>` with `status()` (one replica of the queue group answers) and
    `health.<service>.<instance_id>` (this replica only, so that a replica still loading is not
    reported ready by a sibling). Both answer once the broker has started, after the service's
    own start-up (its model loaded)."""
    import json

    from zocrates_contracts.subjects import health_subject

    async def answer(msg: NatsMessage) -> None:
        if msg.reply_to:
            await broker.publish(json.dumps({"service": service, **status()}).encode(), msg.reply_to)

    broker.subscriber(
        health_subject(service), queue=f"health-{service}", ack_policy=AckPolicy.MANUAL, title=f"health:{service}"
    )(answer)
    broker.subscriber(
        health_subject(service, instance_id), ack_policy=AckPolicy.MANUAL, title=f"health:{service}:{instance_id}"
    )(answer)
