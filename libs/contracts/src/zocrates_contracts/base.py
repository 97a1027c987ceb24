"""The envelope every bus message shares.

A message knows the subject it travels on (`SUBJECT`, a class constant, so a renamed subject
breaks an import rather than production) and its schema version. Every message carries the
ids of the turn it belongs to and a W3C trace context, and a `message_id` that becomes the
`Nats-Msg-Id` header: a retried publish or a redelivered handler republishing the same
message is dropped by the stream's duplicate window.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

#: Ids end up as NATS subject tokens and KV keys, so they are restricted to a safe alphabet.
ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
#: A Zotero library: the user's own (`user`) or a group (`group-<groupID>`), as in retrieval.
LIBRARY_ID_PATTERN = r"^(user|group-[0-9]{1,20})$"
#: A Zotero item key: 8 characters (Zotero.Utilities.generateObjectKey), upper case and digits.
ITEM_KEY_PATTERN = r"^[A-Z0-9]{8}$"
_ID_RE = re.compile(ID_PATTERN)

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]


def new_id() -> str:
    """A fresh, subject-safe id (uuid4 hex)."""
    return uuid.uuid4().hex


def is_valid_id(value: str) -> bool:
    return bool(_ID_RE.match(value))


class TraceContext(BaseModel):
    """W3C trace context (https://www.w3.org/TR/trace-context/) of the publishing span."""

    model_config = ConfigDict(frozen=True)

    traceparent: str | None = None
    tracestate: str | None = None


class ServiceError(BaseModel):
    """A service's explicit refusal or failure, reported to the user by the gateway.

    `code` is machine-readable: `not_available` (the capability is not built or not
    configured), `invalid` (the request was rejected), `unreachable` (an upstream such as the
    internet is out of reach), `timeout`, `internal`.
    """

    model_config = ConfigDict(frozen=True)

    code: Literal["not_available", "invalid", "unreachable", "timeout", "internal", "overloaded"]
    message: str
    service: str = ""


class Message(BaseModel):
    """Base of every bus message."""

    model_config = ConfigDict(extra="forbid")

    SUBJECT: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1

    # A message is written at its class's version: a class that raises SCHEMA_VERSION also
    # declares `schema_version: int = <that version>` (a contract test holds them equal).
    schema_version: int = 1
    message_id: Id = Field(default_factory=new_id)
    turn_id: Id
    session_id: Id
    user_id: Id
    trace: TraceContext = Field(default_factory=TraceContext)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        # Old versions decode (fields only ever get defaults); a newer writer is refused
        # clearly instead of being misread.
        if value < 1 or value > cls.SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is not readable by this build of {cls.__name__} "
                f"(knows 1..{cls.SCHEMA_VERSION}); upgrade this service"
            )
        return value

    def reply_fields(self) -> dict:
        """The envelope fields a reply to this message copies, with a derived message id.

        The derived id makes a reply idempotent: a redelivered request yields a reply with
        the same `Nats-Msg-Id`, which the stream drops as a duplicate.
        """
        return {
            "message_id": f"{self.message_id[:48]}-r",
            "turn_id": self.turn_id,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "trace": self.trace,
        }
