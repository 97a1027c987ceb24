"""Sessions and their turns in a JetStream KV bucket, never only in memory.

Keys: `s.<user>.<session>` holds the session's metadata and ordered turn ids;
`t.<user>.<session>.<turn>` holds one `TurnRecord`, exactly what the `done` event carried;
`p.<user>` holds the user's profile (what the plugin registered: the polite-pool contact);
`u.<user>` the user's settings (`PUT /settings`).
A turn stored at an older `TurnRecord` version is upgraded as it is read (`read_turn`), so
every reader gets the current version; the stored bytes stay as they were.
The user is part of every key, so one user's lookups can never reach another's sessions.
Appending a turn id is a compare-and-set loop, so concurrent turns lose no update.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime

import nats.js.errors
from nats.js.kv import KeyValue
from pydantic import BaseModel, Field

from zocrates_citations import upgrade_turn_record
from zocrates_contracts import SUPPORT_THRESHOLD, EvidenceChunk, TextSpan, TurnRecord
from zocrates_gateway.domain.settings import UserSettings
from zocrates_runtime.bus import READ_RETRY_S, retrying
from zocrates_runtime.kv import latest_entries

MISSING = (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError)
#: How long appending a turn id may stay contended before the turn fails (safety net only).
APPEND_DEADLINE_S = 30.0


def read_turn(value: bytes) -> TurnRecord:
    """A stored turn at the current `TurnRecord` version (older records are upgraded)."""
    return upgrade_turn_record(TurnRecord.model_validate_json(value))


class SessionMeta(BaseModel):
    session_id: str
    title: str = ""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    turn_ids: list[str] = Field(default_factory=list)


class TurnAudit(BaseModel):
    """What a library turn's resolution was computed from, so it can be recomputed or
    re-verified later without new retrieval: the raw answer, the ranked chunks, and the
    per-occurrence probabilities (`None` = not verified), supporting spans, joint probabilities
    and unprinted numbers."""

    raw_text: str
    chunks: list[EvidenceChunk]
    support_probabilities: dict[int, list[float | None]] | None = None
    threshold: float = SUPPORT_THRESHOLD  # the verifier's, when it answered
    refused: bool = False  # the answer said the evidence does not answer: it cites nothing
    quotes: dict[int, list[float | None]] | None = None  # per chunk index: each verbatim quote's relevance
    support_spans: dict[int, list[list[TextSpan]]] | None = None  # per occurrence: where its chunk supports it
    # per occurrence: its bracket's joint probability (a bracket of several passages; None otherwise)
    joint_support: dict[int, list[float | None]] | None = None
    # per occurrence: the numbers its claim states that its chunk does not print (the number rule)
    unprinted_numbers: dict[int, list[list[str]]] | None = None


class Profile(BaseModel):
    """What a user's client registered with `POST /register`."""

    contact_email: str | None = None
    updated_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class SessionStore:
    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def get_profile(self, user_id: str) -> Profile:
        return await self._user_record(f"p.{user_id}", Profile)

    async def put_profile(self, user_id: str, profile: Profile) -> None:
        await self._put_user_record(f"p.{user_id}", profile, "store profile")

    async def get_settings(self, user_id: str) -> UserSettings:
        return await self._user_record(f"u.{user_id}", UserSettings)

    async def put_settings(self, user_id: str, settings: UserSettings) -> None:
        await self._put_user_record(f"u.{user_id}", settings, "store settings")

    async def _read(self, key: str):
        """The entry under `key`, read through a reconnect or a leader election (MISSING raised at once)."""
        return await retrying(lambda: self.kv.get(key), retry_for=READ_RETRY_S, what="read the session store")

    async def _user_record(self, key: str, model):
        """A per-user record, or the model's defaults when the user never stored one."""
        try:
            entry = await self._read(key)
        except MISSING:
            return model()
        return model.model_validate_json(entry.value)

    async def _put_user_record(self, key: str, record, what: str) -> None:
        await retrying(lambda: self.kv.put(key, record.model_dump_json().encode()), what=what)

    async def get_meta(self, user_id: str, session_id: str) -> SessionMeta | None:
        try:
            entry = await self._read(f"s.{user_id}.{session_id}")
        except MISSING:
            return None
        return SessionMeta.model_validate_json(entry.value)

    async def ensure(self, user_id: str, session_id: str, title: str) -> SessionMeta:
        meta = SessionMeta(session_id=session_id, title=title[:120])
        try:
            await retrying(
                lambda: self.kv.create(f"s.{user_id}.{session_id}", meta.model_dump_json().encode()),
                what="create session",
            )
            return meta
        except nats.js.errors.KeyWrongLastSequenceError:
            existing = await self.get_meta(user_id, session_id)
            assert existing is not None
            return existing

    async def add_turn(self, user_id: str, record: TurnRecord) -> None:
        """Store the turn and append its id to the session (idempotent, CAS-protected).

        Both writes go out together; a reader that sees the id a moment before the record
        skips it (see `turns`), and `done` is only sent once both are stored."""
        key = f"t.{user_id}.{record.session_id}.{record.turn_id}"
        await asyncio.gather(
            retrying(lambda: self.kv.put(key, record.model_dump_json().encode()), what="store turn"),
            retrying(lambda: self._append_turn_id(user_id, record), what="append turn id"),
        )

    async def _append_turn_id(self, user_id: str, record: TurnRecord) -> None:
        key = f"s.{user_id}.{record.session_id}"
        loop = asyncio.get_running_loop()
        give_up, backoff = loop.time() + APPEND_DEADLINE_S, 0.002
        while True:
            entry = await self._read(key)
            meta = SessionMeta.model_validate_json(entry.value)
            if record.turn_id in meta.turn_ids:
                return
            meta.turn_ids.append(record.turn_id)
            meta.updated_at = datetime.now(UTC)
            try:
                await self.kv.update(key, meta.model_dump_json().encode(), last=entry.revision)
                return
            except nats.js.errors.KeyWrongLastSequenceError:
                # Another append won this round, so every round makes progress: bound the loop
                # by time, not by a count (N concurrent appends need up to N rounds), and
                # jitter the retry so the losers do not collide again in lockstep.
                if loop.time() > give_up:
                    raise RuntimeError(
                        f"could not append turn {record.turn_id}: session "
                        f"{record.session_id} stayed contended for {APPEND_DEADLINE_S:.0f} s"
                    ) from None
                await asyncio.sleep(random.uniform(0, backoff))
                backoff = min(backoff * 2, 0.05)

    async def put_audit(self, user_id: str, session_id: str, turn_id: str, audit: TurnAudit) -> None:
        key = f"a.{user_id}.{session_id}.{turn_id}"
        await retrying(lambda: self.kv.put(key, audit.model_dump_json().encode()), what="store audit")

    async def get_audit(self, user_id: str, session_id: str, turn_id: str) -> TurnAudit | None:
        try:
            entry = await self._read(f"a.{user_id}.{session_id}.{turn_id}")
        except MISSING:
            return None
        return TurnAudit.model_validate_json(entry.value)

    async def get_turn(self, user_id: str, session_id: str, turn_id: str) -> TurnRecord | None:
        try:
            entry = await self._read(f"t.{user_id}.{session_id}.{turn_id}")
        except MISSING:
            return None
        return read_turn(entry.value)

    async def update_turn(
        self, user_id: str, session_id: str, turn_id: str, change: Callable[[TurnRecord], TurnRecord]
    ) -> TurnRecord | None:
        """Store `change(turn)` in place of the stored turn, compare-and-set: when another write
        lands in between, read it and apply `change` again, so neither is lost. None: no such turn."""
        key = f"t.{user_id}.{session_id}.{turn_id}"
        give_up = asyncio.get_running_loop().time() + APPEND_DEADLINE_S
        while True:
            try:
                entry = await self._read(key)
            except MISSING:
                return None
            updated = change(read_turn(entry.value))
            try:
                await self.kv.update(key, updated.model_dump_json().encode(), last=entry.revision)
                return updated
            except nats.js.errors.KeyWrongLastSequenceError:
                if asyncio.get_running_loop().time() > give_up:
                    raise RuntimeError(f"turn {turn_id} stayed contended for {APPEND_DEADLINE_S:.0f} s") from None

    async def turns(self, user_id: str, meta: SessionMeta) -> list[TurnRecord]:
        records = []
        for turn_id in meta.turn_ids:
            try:
                entry = await self._read(f"t.{user_id}.{meta.session_id}.{turn_id}")
            except MISSING:
                continue
            records.append(read_turn(entry.value))
        return records

    async def recent(self, user_id: str, session_id: str, count: int) -> list[TurnRecord]:
        """The session's last `count` stored turns, oldest first (none for a new session)."""
        meta = await self.get_meta(user_id, session_id)
        if meta is None:
            return []
        found = await asyncio.gather(*(self.get_turn(user_id, session_id, t) for t in meta.turn_ids[-count:]))
        return [t for t in found if t is not None]

    async def list(self, user_id: str) -> list[SessionMeta]:
        metas = [
            SessionMeta.model_validate_json(entry.value) for entry in await latest_entries(self.kv, f"s.{user_id}.*")
        ]
        return sorted(metas, key=lambda m: m.updated_at, reverse=True)

    async def delete(self, user_id: str, session_id: str) -> bool:
        meta = await self.get_meta(user_id, session_id)
        if meta is None:
            return False
        for turn_id in meta.turn_ids:
            await self.kv.purge(f"t.{user_id}.{session_id}.{turn_id}")
            await self.kv.purge(f"a.{user_id}.{session_id}.{turn_id}")
        await self.kv.purge(f"s.{user_id}.{session_id}")
        return True


def dump(meta: SessionMeta) -> dict:
    return json.loads(meta.model_dump_json())
