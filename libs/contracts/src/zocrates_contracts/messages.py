"""Every message on the bus, with its subject.

Requests travel on `zocrates.<capability>.requested` and are consumed by a durable queue
group of the owning service. Replies travel on the subject the request names in `reply_to`
(`zocrates.reply.<gateway instance>.<capability>`), so the gateway replica that owns the turn
receives them; the audit stream captures both.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zocrates_contracts.base import Id, Message, ServiceError
from zocrates_contracts.evidence import EvidenceChunk
from zocrates_contracts.subjects import (
    DISCOVERY_COMPLETED,
    DISCOVERY_REQUESTED,
    RECHECK_COMPLETED,
    RECHECK_REQUESTED,
    RETRIEVAL_COMPLETED,
    RETRIEVAL_REQUESTED,
    STAGING_COMPLETED,
    STAGING_REQUESTED,
    TURN_REQUESTED,
    TURN_RESOLVED,
    VERIFICATION_COMPLETED,
    VERIFICATION_REQUESTED,
)
from zocrates_contracts.turns import TurnRecord

#: Bounds that keep every message well under NATS's 1 MB max_payload.
MAX_QUERY_CHARS = 4_000
MAX_CLAIM_CHARS = 4_000
MAX_SOURCE_CHARS = 32_000
MAX_PAIRS = 512
MAX_CANDIDATES = 200


class Request(Message):
    """A request for work; the reply goes to `reply_to` before `deadline`."""

    reply_to: str = Field(min_length=1, max_length=256)
    deadline: datetime | None = None


# --- turn audit -----------------------------------------------------------------------------


class TurnRequested(Message):
    """A user asked something; recorded for audit before any work starts."""

    SUBJECT = TURN_REQUESTED

    message: str = Field(min_length=1, max_length=32_768)
    intent: Literal["library", "discovery", "chat"]


class TurnResolved(Message):
    """A turn finished; `record` is exactly what the SSE `done` event and rehydration return."""

    SUBJECT = TURN_RESOLVED

    record: TurnRecord


# --- retrieval ------------------------------------------------------------------------------


class RetrievalRequested(Request):
    """Find the passages of the user's library most relevant to `query`."""

    SUBJECT = RETRIEVAL_REQUESTED

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(default=12, ge=1, le=100)
    library_id: Id | None = None


class EvidenceRetrieved(Message):
    """Ranked evidence for a `RetrievalRequested` (most relevant first), or an error."""

    SUBJECT = RETRIEVAL_COMPLETED

    chunks: list[EvidenceChunk] = Field(default_factory=list, max_length=100)
    error: ServiceError | None = None


# --- verification ---------------------------------------------------------------------------


class VerificationPair(BaseModel):
    """One citation occurrence to score: does `source_text` support `claim`?"""

    model_config = ConfigDict(frozen=True)

    chunk_index: int = Field(ge=1)
    occurrence: int = Field(ge=1)
    claim: str = Field(min_length=1, max_length=MAX_CLAIM_CHARS)
    source_text: str = Field(min_length=1, max_length=MAX_SOURCE_CHARS)
    compound: bool = False


class PairScore(BaseModel):
    """Support probability of one pair; `None` means not verified (fails open)."""

    model_config = ConfigDict(frozen=True)

    chunk_index: int = Field(ge=1)
    occurrence: int = Field(ge=1)
    probability: float | None = Field(default=None, ge=0.0, le=1.0)


class VerificationRequested(Request):
    SUBJECT = VERIFICATION_REQUESTED

    pairs: list[VerificationPair] = Field(min_length=1, max_length=MAX_PAIRS)


class VerificationCompleted(Message):
    """Scores in the order of the request's pairs, and which backend produced them."""

    SUBJECT = VERIFICATION_COMPLETED

    scores: list[PairScore] = Field(default_factory=list, max_length=MAX_PAIRS)
    provider: str = ""
    model: str = ""
    device: str = ""
    latency_ms: float = 0.0
    error: ServiceError | None = None


# --- discovery ------------------------------------------------------------------------------


class Candidate(BaseModel):
    """A paper found online that the user may import."""

    model_config = ConfigDict(frozen=True)

    candidate_id: Id
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    openalex_id: str | None = None
    abstract: str | None = None
    keywords: list[str] = Field(default_factory=list)
    cited_by_count: int | None = None
    pdf_url: str | None = None
    oa_status: str | None = None
    license: str | None = None


class DroppedCandidate(BaseModel):
    """A candidate left out because the user already owns it, and why."""

    model_config = ConfigDict(frozen=True)

    candidate: Candidate
    reason: str
    matched_item_key: str | None = None


class DiscoveryRequested(Request):
    SUBJECT = DISCOVERY_REQUESTED

    queries: list[str] = Field(min_length=1, max_length=8)
    limit: int = Field(default=10, ge=1, le=50)
    library_id: Id | None = None


class CandidatesFound(Message):
    SUBJECT = DISCOVERY_COMPLETED

    candidates: list[Candidate] = Field(default_factory=list, max_length=MAX_CANDIDATES)
    dropped: list[DroppedCandidate] = Field(default_factory=list, max_length=MAX_CANDIDATES)
    notes: list[str] = Field(default_factory=list, max_length=20,
                             description="What the user should know: demo mode, budget spent, fallbacks")
    error: ServiceError | None = None


class RecheckRequested(Request):
    """At import time: which of these candidates does the user own by now?"""

    SUBJECT = RECHECK_REQUESTED

    candidates: list[Candidate] = Field(min_length=1, max_length=50)
    library_id: Id | None = None


class CandidatesRechecked(Message):
    """The candidates still novel, and those now owned (with why)."""

    SUBJECT = RECHECK_COMPLETED

    candidates: list[Candidate] = Field(default_factory=list, max_length=50)
    dropped: list[DroppedCandidate] = Field(default_factory=list, max_length=50)
    error: ServiceError | None = None


# --- staging --------------------------------------------------------------------------------


class StagingRequested(Request):
    SUBJECT = STAGING_REQUESTED

    batch_id: Id
    candidates: list[Candidate] = Field(min_length=1, max_length=50)


class StagedFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    candidate_id: Id
    status: Literal["staged", "no_pdf", "failed", "duplicate"]
    object_name: str | None = None
    sha256: str | None = None
    size: int | None = None
    reason: str | None = None


class BatchStaged(Message):
    SUBJECT = STAGING_COMPLETED

    batch_id: Id
    files: list[StagedFile] = Field(default_factory=list)
    error: ServiceError | None = None


#: Every message class, for schema export and the drift test.
ALL_MESSAGES: tuple[type[Message], ...] = (
    TurnRequested,
    TurnResolved,
    RetrievalRequested,
    EvidenceRetrieved,
    VerificationRequested,
    VerificationCompleted,
    DiscoveryRequested,
    CandidatesFound,
    RecheckRequested,
    CandidatesRechecked,
    StagingRequested,
    BatchStaged,
)

#: The reply class of each request class, so the bus can answer with an error on its own.
REPLY_OF: dict[type[Request], type[Message]] = {
    RetrievalRequested: EvidenceRetrieved,
    VerificationRequested: VerificationCompleted,
    DiscoveryRequested: CandidatesFound,
    RecheckRequested: CandidatesRechecked,
    StagingRequested: BatchStaged,
}
