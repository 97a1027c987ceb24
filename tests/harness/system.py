"""A whole system in one event loop: real nats-server, real gateway over real HTTP on
loopback, and the real bus apps of each service with instant fake domains."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

import httpx

from harness.evidence import scored, with_units
from harness.serving import serving
from zocrates_contracts import (
    Creator,
    EvidenceChunk,
    EvidenceRetrieved,
    LibraryItemsFound,
    LibraryLookupRequested,
    LibraryOutline,
    LibraryOutlineRequested,
    PairScore,
    RetrievalRequested,
    VerificationCompleted,
    VerificationRequested,
)
from zocrates_gateway.app import create_app
from zocrates_gateway.config import GatewaySettings
from zocrates_gateway.server import AbortingH11Protocol
from zocrates_runtime.settings import ZocratesSettings

CHUNKS = [
    EvidenceChunk(
        chunk_id="c1",
        item_key="ITEMAAAA",
        attachment_key="ATTAAAAA",
        title="Somatic mutation rates in monozygotic twins",
        creators=[Creator(first_name="H.", last_name="Jonsson"), Creator(first_name="K.", last_name="Stefansson")],
        year=2021,
        section="Methods",
        publication="Nature Genetics",
        text="The somatic mutation rate was estimated using whole-genome sequencing of "
        "387 pairs of monozygotic twins. Early embryonic mutations were common.",
    ),
    EvidenceChunk(
        chunk_id="c2",
        item_key="ITEMBBBB",
        title="Attention Is All You Need",
        creators=[Creator(last_name="Vaswani"), Creator(last_name="Shazeer"), Creator(last_name="Parmar")],
        year=2017,
        section="3.2 Attention",
        text="An attention function can be described as mapping a query and a set of "
        "key-value pairs to an output, where the query, keys, values, and output are all vectors.",
    ),
    EvidenceChunk(
        chunk_id="c3",
        item_key="ITEMCCCC",
        title="Deep RAG Systems",
        creators=[Creator(last_name="Smith")],
        year=2023,
        text="Retrieval augmented generation systems combine a retriever with a generator.",
    ),
]
CHUNKS = [with_units(c) for c in CHUNKS]  # as retrieval sends them: with their answer units


@dataclass
class FakeRetrieval:
    chunks: list[EvidenceChunk] = field(default_factory=lambda: list(CHUNKS))
    delay: float = 0.0
    score_units: bool = False  # instant by default: units unscored, the answer writer goes by words
    calls: int = 0

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok", "library": {"source": "none"}}

    async def lookup(self, request: LibraryLookupRequested) -> LibraryItemsFound:
        """No item is found by identifier or title here: the fake library is a list of chunks."""
        return LibraryItemsFound(**request.reply_fields(), searched_items=len({c.item_key for c in self.chunks}))

    async def outline(self, request: LibraryOutlineRequested) -> LibraryOutline:
        """The fake library has neither collections nor tags."""
        return LibraryOutline(**request.reply_fields())

    async def search(self, request: RetrievalRequested) -> EvidenceRetrieved:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        chunks = self.chunks[: request.top_k]
        if self.score_units:  # as the real service does at search time (the real embedding model)
            chunks = await asyncio.to_thread(scored, request.query, chunks)
        return EvidenceRetrieved(**request.reply_fields(), chunks=chunks)


@dataclass
class FakeVerifier:
    probability: float | None = 0.9
    delay: float = 0.0
    calls: int = 0

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok", "provider": "fake"}

    async def verify(self, request: VerificationRequested) -> VerificationCompleted:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        scores = [
            PairScore(chunk_index=p.chunk_index, occurrence=p.occurrence, probability=self.probability)
            for p in request.pairs
        ]
        return VerificationCompleted(**request.reply_fields(), scores=scores, provider="fake", model="fake")


class UnreachableDiscovery:
    """Discovery as it behaves on a machine without internet access."""

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok", "openalex_mode": "demo"}

    async def discover(self, request):
        from zocrates_contracts import CandidatesFound, ServiceError

        return CandidatesFound(
            **request.reply_fields(),
            error=ServiceError(
                code="unreachable",
                service="discovery",
                message="OpenAlex is unreachable from this machine. Online discovery needs internet access.",
            ),
        )

    async def answer_recheck(self, request):
        from zocrates_contracts import CandidatesRechecked

        return CandidatesRechecked(**request.reply_fields(), candidates=request.candidates)


@dataclass
class System:
    url: str
    token: str
    app: object
    retrieval: FakeRetrieval
    verifier: FakeVerifier
    service_apps: dict
    client: httpx.AsyncClient

    @property
    def auth(self) -> dict:
        return {"Authorization": f"Bearer {self.token}"}

    async def new_token(self, user: str) -> str:
        return await self.app.state.gateway.tokens.create(user)

    async def chat(self, message: str, session_id: str | None = None, token: str | None = None) -> list[dict]:
        return await collect(self.client, self.url, message, session_id, token or self.token)


def parse_sse(text: str) -> list[dict]:
    events = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        item: dict = {}
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "data":
                item["data"] = item["data"] + "\n" + value if "data" in item else value
            else:
                item[key] = value
        if "event" in item:
            import json

            item["data"] = json.loads(item.get("data", "null"))
            events.append(item)
    return events


async def collect(client, url, message, session_id, token, scope: dict | None = None) -> list[dict]:
    body = (
        {"message": message} | ({"session_id": session_id} if session_id else {}) | ({"scope": scope} if scope else {})
    )
    async with client.stream(
        "POST", f"{url}/chat", json=body, headers={"Authorization": f"Bearer {token}"}
    ) as response:
        assert response.status_code == 200, await response.aread()
        text = "".join([chunk async for chunk in response.aiter_text()])
    return parse_sse(text)


@contextlib.asynccontextmanager
async def running_system(nats_url: str, *, discovery=None, staging=None, **gateway_overrides):
    from zocrates_discovery.app import create_app as discovery_app
    from zocrates_retrieval.app import create_app as retrieval_app
    from zocrates_staging.app import create_app as staging_app
    from zocrates_verifier.app import create_app as verifier_app

    base = ZocratesSettings(nats_url=nats_url)
    retrieval, verifier = FakeRetrieval(), FakeVerifier()
    apps = {
        "retrieval": retrieval_app(base, service=retrieval),
        "verifier": verifier_app(base, service=verifier),
        "discovery": discovery_app(base, service=discovery or UnreachableDiscovery()),
        "staging": staging_app(base, **({"service": staging} if staging else {})),
    }
    for app in apps.values():
        await app.start()
    app = create_app(GatewaySettings(nats_url=nats_url, **gateway_overrides))
    try:
        async with (
            serving(app, lifespan="on", http=AbortingH11Protocol) as url,
            httpx.AsyncClient(timeout=30) as client,
        ):
            token = await app.state.gateway.tokens.create("alice")
            yield System(url, token, app, retrieval, verifier, apps, client)
    finally:
        for service_app in apps.values():
            await service_app.stop()
