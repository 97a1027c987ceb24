"""Helpers the staging tests share (importable, unlike conftest)."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

from zocrates_contracts import Candidate, StagingRequested

PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:2800:21f:cb07:6820:80da:af6b:8b2c"


class FakeResolver:
    """DNS from a table, counting lookups; unknown names fail like getaddrinfo does."""

    def __init__(self, table: dict[str, Sequence[str] | list[Sequence[str]]] | None = None):
        self.table = dict(table or {})
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        answer = self.table.get(host.rstrip(".").lower())
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if answer and isinstance(answer[0], list):  # a sequence of answers: rebinding
            return list(answer.pop(0) if len(answer) > 1 else answer[0])
        return list(answer)


def leftovers(*folders: Path) -> list[Path]:
    """Files (temp files included) anywhere under `folders`."""
    return [p for f in folders if f.exists() for p in f.rglob("*") if p.is_file()]


def batch(*urls: str | None, user_id: str = "alice", batch_id: str = "b1") -> StagingRequested:
    """A staging request with one candidate per URL (None: no PDF URL)."""
    return StagingRequested(
        turn_id="t1",
        session_id="s1",
        user_id=user_id,
        reply_to="zocrates.reply.g1.staging",
        batch_id=batch_id,
        candidates=[Candidate(candidate_id=f"c{i}", title=f"Paper {i}", pdf_url=url) for i, url in enumerate(urls)],
    )
