"""Zocrates contracts: every bus message and shared record as a pydantic v2 model."""

from zocrates_contracts.base import (
    ID_PATTERN,
    Message,
    ServiceError,
    TraceContext,
    is_valid_id,
    new_id,
)
from zocrates_contracts.evidence import QUOTABLE_UNITS, SCORED_UNITS, AnswerUnit, Creator, EvidenceChunk
from zocrates_contracts.messages import (
    ALL_MESSAGES,
    MAX_SYNC_ITEMS,
    REPLY_OF,
    AttachmentAccepted,
    AttachmentUploaded,
    BatchStaged,
    Candidate,
    CandidatesFound,
    CandidatesRechecked,
    CatalogEntry,
    DiscoveryRequested,
    DroppedCandidate,
    EvidenceRetrieved,
    IngestFailure,
    ItemRef,
    LibraryItemMatch,
    LibraryItemsFound,
    LibraryLookupRequested,
    LibraryStatus,
    LibraryStatusRequested,
    LibrarySynced,
    LibrarySyncRequested,
    PairScore,
    RecheckRequested,
    Request,
    RetrievalRequested,
    RetrievalScope,
    StagedFile,
    StagingRequested,
    SyncedItem,
    TurnRequested,
    TurnResolved,
    VerificationCompleted,
    VerificationPair,
    VerificationRequested,
)
from zocrates_contracts.turns import (
    Citation,
    CitationOccurrence,
    References,
    SourceRef,
    TurnRecord,
    Verdict,
    VerificationSummary,
)

__all__ = [name for name in dir() if not name.startswith("_")]
