"""One structlog processor chain for every service.

JSON lines off a terminal (containers, the embedded stack's pipes), a readable console on one.
Bind request-scoped fields with `structlog.contextvars.bind_contextvars(turn_id=...,
session_id=..., message_id=..., subject=...)` (or `bound_contextvars` as a context manager):
every line logged in that context, through structlog or stdlib logging, carries them.

Stdlib records (uvicorn, faststream, httpx, nats) go through the same chain: the root logger
gets the one handler, and faststream's and uvicorn's own loggers, which do not propagate, get
it directly, so faststream's per-message `subject` and `message_id` land as JSON fields. Run
uvicorn with `log_config=None`, otherwise it installs its own handlers after this.

Secrets never reach a log line: values under authorization/token/api_key/secret/password-like
keys, bearer tokens and `api_key=`/`token=` query parameters inside any string are replaced.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"

# Whole-word suffixes, so `access_token` and `x-api-key` are secret but `max_tokens` and
# `token_count` (budgets, counters) are not.
_SECRET_KEY = re.compile(
    r"(^|[_-])(authorization|token|api[_-]?key|secret|password|passwd|cookie|credentials?)$",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(bearer)\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE)
_QUERY_SECRET = re.compile(r"([?&](?:api_?key|access_token|token|key)=)[^&\s#\"']+", re.IGNORECASE)
# Credentials in a URL's userinfo: nats://user:password@host (a NATS URL in a traceback).
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s/]+@", re.IGNORECASE)

# Libraries whose loggers do not propagate to the root (faststream sets propagate=False and
# adds its own handler unless one to stdout already exists) or that uvicorn configures.
_FOREIGN_LOGGERS = (
    "faststream",
    "faststream.access.nats",
    "uvicorn",
    "uvicorn.error",
    "uvicorn.access",
)

# Fields faststream's access logger puts on each record; lifted into the event dict.
_FASTSTREAM_EXTRAS = ["subject", "stream", "queue", "message_id"]


def redact_text(text: str) -> str:
    """`text` with bearer tokens, URL passwords and secret query parameters replaced."""
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {k: REDACTED if _is_secret_key(k, v) else _redact(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redact(v) for v in value)
    return value


def _is_secret_key(key: object, value: object) -> bool:
    return isinstance(key, str) and value is not None and bool(_SECRET_KEY.search(key))


def redact_secrets(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    """structlog processor: replace secret-looking fields and bearer tokens in strings."""
    return _redact(event_dict)


def _add_faststream_fields(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
    record = event_dict.get("_record")  # set only for stdlib records
    for key in _FASTSTREAM_EXTRAS:
        if value := getattr(record, key, None):
            event_dict.setdefault(key, value)
    return event_dict


def _add_service(service: str) -> Processor:
    def add_service(_: WrappedLogger, __: str, event_dict: EventDict) -> EventDict:
        event_dict.setdefault("service", service)
        return event_dict

    return add_service


def configure_logging(
    service: str,
    *,
    json: bool | None = None,
    level: str | int = "INFO",
    stream: TextIO | None = None,
) -> None:
    """Route structlog and stdlib logging through one chain, writing to stdout.

    `json` is the settings' `log_json` (`ZOCRATES_LOG_JSON`); None picks JSON unless the
    stream is a terminal.
    Every line carries `service`, the level, an ISO UTC timestamp and any context variables
    bound in the current context. Safe to call again (tests, reconfiguration): it replaces
    the handler it installed before.
    """
    stream = stream or sys.stdout
    as_json = json if json is not None else not stream.isatty()
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        _add_faststream_fields,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _add_service(service),
        structlog.processors.StackInfoRenderer(),
        # Tracebacks become text before redaction so a token in an exception message is
        # caught too; the console then shows them plainly rather than prettily.
        structlog.processors.format_exc_info,
        redact_secrets,
    ]
    renderer: Processor = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=stream.isatty(), exception_formatter=structlog.dev.plain_traceback)
    )
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    handler._zocrates = True  # type: ignore[attr-defined]  # marks the handler we own

    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_zocrates", False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level if isinstance(level, int) else level.upper())
    for name in _FOREIGN_LOGGERS:
        foreign = logging.getLogger(name)
        foreign.handlers = [handler]
        foreign.propagate = False
