"""Bearer tokens: `zoc_<id>_<secret>`, stored as HMAC-SHA256 digests in a KV bucket.

Only the digest of the secret part is stored (keyed by the id), so a dump of the bucket
reveals no usable token; lookups compare digests with `hmac.compare_digest`. Tokens are
shown once, at creation.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

import nats.js.errors
from nats.js.kv import KeyValue

from zocrates_runtime.bus import READ_RETRY_S, retrying

PREFIX = "zoc"


@dataclass(frozen=True)
class Principal:
    user_id: str
    token_id: str


def digest(pepper: bytes, secret: str) -> str:
    return hmac.new(pepper, secret.encode(), hashlib.sha256).hexdigest()


def parse_token(token: str) -> tuple[str, str] | None:
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1].isalnum() or len(parts[2]) < 20:
        return None
    return parts[1], parts[2]


class TokenStore:
    def __init__(self, kv: KeyValue, pepper: str) -> None:
        self.kv = kv
        self.pepper = pepper.encode()

    async def create(self, user_id: str, *, label: str = "", expires_at: datetime | None = None) -> str:
        token_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        record = {
            "user_id": user_id,
            "digest": digest(self.pepper, secret),
            "label": label,
            "created_at": datetime.now(UTC).isoformat(),
            "revoked": False,
            "expires_at": expires_at.isoformat() if expires_at else None,
        }
        await self.kv.create(f"tok.{token_id}", json.dumps(record).encode())
        return f"{PREFIX}_{token_id}_{secret}"

    async def verify(self, token: str) -> Principal | None:
        parsed = parse_token(token)
        if parsed is None:
            return None
        token_id, secret = parsed
        try:  # read through a reconnect or a leader election: a lost NATS node is no 401 or 500
            entry = await retrying(lambda: self.kv.get(f"tok.{token_id}"), retry_for=READ_RETRY_S, what="read a token")
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            digest(self.pepper, secret)  # same work on a miss as on a hit
            return None
        record = json.loads(entry.value)
        if not hmac.compare_digest(record["digest"], digest(self.pepper, secret)):
            return None
        if record.get("revoked"):
            return None
        expires = record.get("expires_at")
        if expires and datetime.fromisoformat(expires) < datetime.now(UTC):
            return None
        return Principal(user_id=record["user_id"], token_id=token_id)

    async def revoke(self, token_id: str) -> bool:
        try:
            entry = await self.kv.get(f"tok.{token_id}")
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            return False
        record = json.loads(entry.value) | {"revoked": True}
        await self.kv.update(f"tok.{token_id}", json.dumps(record).encode(), last=entry.revision)
        return True

    async def list(self) -> list[dict]:
        from zocrates_runtime.kv import latest_entries

        rows = []
        for entry in sorted(await latest_entries(self.kv, "tok.*"), key=lambda e: e.key):
            record = json.loads(entry.value)
            record.pop("digest", None)
            rows.append({"token_id": entry.key.removeprefix("tok."), **record})
        return rows
