"""A whole system in one event loop: real nats-server, real gateway over real HTTP on
loopback, and the real bus apps of each service with instant fake domains."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx

from harness.evidence import scored, with_units
from harness.serving import serving
from zocrates_contracts import (
    SUPPORT_THRESHOLD,
    Candidate,
    CandidatesFound,
    CandidatesRechecked,
    Creator,
    DiscoveryRequested,
    DroppedCandidate,
    EvidenceChunk,
    EvidenceRetrieved,
    LibraryItemsFound,
    LibraryLookupRequested,
    LibraryOutline,
    LibraryOutlineRequested,
    PairScore,
    RecheckRequested,
    RetrievalRequested,
    ServiceError,
    TextSpan,
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
    requests: list[RetrievalRequested] = field(default_factory=list)

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok", "library": {"source": "none"}}

    async def lookup(self, request: LibraryLookupRequested) -> LibraryItemsFound:
        """No item is found by identifier, title or author here: the fake library is a list of chunks."""
        return LibraryItemsFound(**request.reply_fields(), searched_items=len({c.item_key for c in self.chunks}))

    async def outline(self, request: LibraryOutlineRequested) -> LibraryOutline:
        """The fake library has neither collections nor tags."""
        return LibraryOutline(**request.reply_fields())

    async def search(self, request: RetrievalRequested) -> EvidenceRetrieved:
        self.calls += 1
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        chunks = self.chunks[: request.top_k]
        if getattr(request.scope, "items", None):  # a scope of items: only theirs
            keys = {i.item_key for i in request.scope.items}
            chunks = [c for c in self.chunks if c.item_key in keys][: request.top_k]
        if self.score_units:  # as the real service does at search time (the real embedding model)
            chunks = await asyncio.to_thread(scored, request.query, chunks)
        return EvidenceRetrieved(**request.reply_fields(), chunks=chunks)


def first_sentence(text: str) -> TextSpan:
    """Where the fake verifier says a passage supports every claim: its first sentence."""
    return TextSpan(start=0, end=text.find(". ") + 1 or len(text))


@dataclass
class FakeVerifier:
    probability: float | None = 0.9
    threshold: float = SUPPORT_THRESHOLD
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
            PairScore(
                chunk_index=p.chunk_index,
                occurrence=p.occurrence,
                probability=self.probability,
                spans=[] if self.probability is None else [first_sentence(p.source_text)],
                joint=p.joint,
            )
            for p in request.pairs
        ]
        return VerificationCompleted(
            **request.reply_fields(), scores=scores, provider="fake", model="fake", threshold=self.threshold
        )


@dataclass
class FakeDiscovery:
    """Discovery that finds the same candidates for every question; a re-check at import time
    drops the ones `owned` says the user has by now."""

    candidates: list[Candidate] = field(default_factory=list)
    dropped: list[DroppedCandidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    owned: Callable[[Candidate], bool] = lambda candidate: False

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok"}

    async def discover(self, request: DiscoveryRequested) -> CandidatesFound:
        return CandidatesFound(
            **request.reply_fields(), candidates=self.candidates, dropped=self.dropped, notes=self.notes
        )

    async def answer_recheck(self, request: RecheckRequested) -> CandidatesRechecked:
        owned = [c for c in request.candidates if self.owned(c)]
        return CandidatesRechecked(
            **request.reply_fields(),
            candidates=[c for c in request.candidates if c not in owned],
            dropped=[DroppedCandidate(candidate=c, reason="DOI match") for c in owned],
        )


class UnreachableDiscovery:
    """Discovery as it behaves on a machine without internet access."""

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {"status": "ok", "openalex_mode": "demo"}

    async def discover(self, request):
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


class FoundDiscovery(UnreachableDiscovery):
    """Discovery online that finds `candidates` for whatever is asked, keeping each request."""

    def __init__(self, *candidates) -> None:
        self.candidates, self.requests = list(candidates), []

    async def discover(self, request):
        self.requests.append(request)
        return CandidatesFound(**request.reply_fields(), candidates=self.candidates)


#: The services that serve the bus through an app of their own (the gateway serves HTTP).
BUS_SERVICES = ("retrieval", "verifier", "discovery", "staging")


class IdleService:
    """A service that does nothing: for looking at an app's wiring, not at its work."""

    async def start(self) -> None: ...
    async def close(self) -> None: ...

    def health(self) -> dict:
        return {}


def idle_app(name: str):
    """The bus app of service `name` over an IdleService, not started."""
    return importlib.import_module(f"zocrates_{name}.app").create_app(ZocratesSettings(), service=IdleService())


def durable_subscriptions(app) -> list[tuple[str, str, object]]:
    """(subject, durable name, consumer config) of each JetStream consumer a bus app subscribes."""
    found = []
    for sub in app.broker.subscribers:
        config = getattr(sub, "config", None)
        if getattr(config, "durable_name", None) is not None:
            found.append((config.filter_subject or sub.subject.broker_address, config.durable_name, config))
    return found


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
async def bus_apps(nats_url: str, **services) -> AsyncIterator[dict]:
    """Each service object (`retrieval=FakeRetrieval()`, ...; None: the real one) served on the
    bus by its service's own app: the apps by name, started, and stopped at the end."""
    base = ZocratesSettings(nats_url=nats_url)
    apps = {
        name: importlib.import_module(f"zocrates_{name}.app").create_app(base, service=service)
        for name, service in services.items()
    }
    started = []
    try:
        for app in apps.values():
            await app.start()
            started.append(app)
        yield apps
    finally:
        for app in started:
            await app.stop()


@contextlib.asynccontextmanager
async def running_system(nats_url: str, *, discovery=None, staging=None, verifier=None, **gateway_overrides):
    """Every service on the bus at `nats_url` and the gateway over HTTP. Retrieval is the fixed
    three chunks above; the verifier a fixed score unless `verifier` is given (e.g. the real
    service); discovery unreachable unless `discovery` is given."""
    retrieval, verifier = FakeRetrieval(), verifier or FakeVerifier()
    services = dict(retrieval=retrieval, verifier=verifier, discovery=discovery or UnreachableDiscovery())
    async with bus_apps(nats_url, **services, staging=staging) as apps:
        app = create_app(GatewaySettings(nats_url=nats_url, **gateway_overrides))
        async with (
            serving(app, lifespan="on", http=AbortingH11Protocol) as url,
            httpx.AsyncClient(timeout=30) as client,
        ):
            token = await app.state.gateway.tokens.create("alice")
            yield System(url, token, app, retrieval, verifier, apps, client)
