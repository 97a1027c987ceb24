"""What the gateway's routes and turns share: built once when the app is created, its stores
opened when it starts (they need the bus)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from faststream.nats import NatsBroker
from nats.js.object_store import ObjectStore

from zocrates_contracts.subjects import LIBRARY_BUCKET, SESSIONS_BUCKET, TOKENS_BUCKET
from zocrates_gateway.adapters.sessions import SessionStore
from zocrates_gateway.adapters.tokens import TokenStore
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.events import TurnLog
from zocrates_runtime import bus, stores
from zocrates_runtime.staged_store import NatsStagedStore


@dataclass
class Gateway:
    settings: GatewaySettings
    broker: NatsBroker
    requester: bus.Requester
    #: Turns of this replica by id, with the task running each, kept a while after they end.
    turns: dict[str, tuple[TurnLog, asyncio.Future]] = field(default_factory=dict)
    tokens: TokenStore = field(init=False)
    sessions: SessionStore = field(init=False)
    staged: NatsStagedStore = field(init=False)
    _library_files: ObjectStore | None = field(default=None, init=False)

    @classmethod
    def create(cls, settings: GatewaySettings) -> Gateway:
        broker = bus.make_broker(settings)
        return cls(settings, broker, bus.Requester(broker, settings.instance_id))

    @property
    def js(self):
        return self.broker.config.connection_state.stream

    async def start(self) -> None:
        """Connect to the bus and open the stores (each created on first use)."""
        await self.broker.start()
        replicas = self.settings.stream_replicas
        await bus.ensure_streams(self.broker, replicas)
        self.tokens = TokenStore(
            await stores.key_value(self.js, TOKENS_BUCKET, replicas), self.settings.token_pepper.get_secret_value()
        )
        self.sessions = SessionStore(await stores.key_value(self.js, SESSIONS_BUCKET, replicas))
        self.staged = NatsStagedStore(self.js)

    async def stop(self) -> None:
        for _, task in list(self.turns.values()):
            task.cancel()
        await self.broker.stop()

    async def library_files(self) -> ObjectStore:
        """The lab-hosted library files' object store, opened on first use."""
        if self._library_files is None:
            self._library_files = await stores.object_store(self.js, LIBRARY_BUCKET, self.settings.stream_replicas)
        return self._library_files
