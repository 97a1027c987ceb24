"""The events of one turn: an ordered, append-only log that SSE readers follow.

Event ids are 1, 2, 3... within the turn, so `Last-Event-ID: n` resumes after event n. Each
event is also published to `events.<turn_id>` (captured by the events stream), so a turn can
be replayed after it finished or from another gateway replica.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

TERMINAL = frozenset({"done", "error"})


@dataclass(frozen=True)
class TurnEvent:
    id: int
    event: str
    data: dict

    def sse(self) -> dict:
        return {"id": str(self.id), "event": self.event, "data": json.dumps(self.data, ensure_ascii=False)}


@dataclass
class TurnLog:
    turn_id: str
    user_id: str
    session_id: str
    events: list[TurnEvent] = field(default_factory=list)
    on_append: Callable[[TurnEvent], Awaitable[None]] | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def finished(self) -> bool:
        return bool(self.events) and self.events[-1].event in TERMINAL

    async def append(self, event: str, data: dict) -> TurnEvent:
        if self.finished:
            raise RuntimeError(f"turn {self.turn_id} already ended")
        item = TurnEvent(len(self.events) + 1, event, data)
        self.events.append(item)
        self._changed.set()
        self._changed = asyncio.Event()
        if self.on_append is not None:
            await self.on_append(item)
        return item

    async def follow(self, after: int = 0) -> AsyncIterator[TurnEvent]:
        """Yield events with id > `after`, waiting for new ones until the turn ends."""
        position = after
        while True:
            while position < len(self.events):
                item = self.events[position]
                position += 1
                yield item
                if item.event in TERMINAL:
                    return
            if self.finished:
                return
            await self._changed.wait()
