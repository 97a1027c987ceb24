"""Every message on the bus, with its subject.

Requests travel on `zocrates.<capability>.requested` and are consumed by a durable queue
group of the owning service. Replies travel on the subject the request names in `reply_to`
(`zocrates.reply.<gateway instance>.<capability>`), so the gateway replica that owns the turn
receives them; the audit stream captures both.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from zocrates_contracts.base import Id, Message, ServiceError
from zocrates_contracts.candidates import Candidate
from zocrates_contracts.evidence import BackMatterTopic, Creator, EvidenceChunk
from zocrates_contracts.identifiers import normalize_arxiv, normalize_doi, normalize_pmid
from zocrates_contracts.scopes import (
    MAX_TAG_CHARS,
    ItemKey,
    LibraryId,
    RetrievalScope,
    TagName,
    upgrade_scope,
)
from zocrates_contracts.subjects import (
    DISCOVERY_COMPLETED,
    DISCOVERY_REQUESTED,
    LIBRARY_LOOKUP_COMPLETED,
    LIBRARY_LOOKUP_REQUESTED,
    LIBRARY_OUTLINE_COMPLETED,
    LIBRARY_OUTLINE_REQUESTED,
    LIBRARY_STATUS_COMPLETED,
    LIBRARY_STATUS_REQUESTED,
    LIBRARY_SYNC_COMPLETED,
    LIBRARY_SYNC_REQUESTED,
    LIBRARY_UPLOAD_COMPLETED,
    LIBRARY_UPLOAD_REQUESTED,
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
from zocrates_contracts.turns import SUPPORT_THRESHOLD, TextSpan, TurnRecord

#: Bounds that keep every message well under NATS's 1 MB max_payload.
MAX_QUERY_CHARS = 4_000
MAX_CLAIM_CHARS = 4_000
MAX_SOURCE_CHARS = 32_000
MAX_PAIRS = 512
#: Passages a joint pair joins at most: a bracket's distinct indices (two digits each).
MAX_JOINT_PASSAGES = 99
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
    SCHEMA_VERSION = 2  # 2: the record at TurnRecord version 2 (prose and sources apart)
    schema_version: int = 2

    record: TurnRecord


# --- retrieval ------------------------------------------------------------------------------


class RetrievalRequested(Request):
    """Find the passages of the user's library most relevant to `query` (within `scope`)."""

    SUBJECT = RETRIEVAL_REQUESTED
    SCHEMA_VERSION = (
        4  # 2: scope (items); 3: scope tagged by kind (library, collection, tag, items, attachment); 4: back_matter
    )
    schema_version: int = 4

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: int = Field(default=12, ge=1, le=100)
    library_id: Id | None = None
    scope: RetrievalScope | None = Field(default=None, description="Search only here; None: the whole library")
    back_matter: list[BackMatterTopic] = Field(
        default_factory=list,
        max_length=10,
        description="The back matter the question asks about (who funded the work, competing interests, ...), "
        "as the asker read it: the sections that answer it rank first; none: back matter ranks last",
    )

    @field_validator("scope", mode="before")
    @classmethod
    def _upgrade_scope(cls, value: object) -> object:
        return upgrade_scope(value)


class EvidenceRetrieved(Message):
    """Ranked evidence for a `RetrievalRequested` (most relevant first), or an error.

    Version 2: each chunk carries its section `role` and its answer `units`. Version 3:
    `scope_empty`. Version 4: each chunk's `pages` (a chunk of an older version has none).
    Version 5: each chunk's `position` in its source. Version 6: a unit may be a `term_list`."""

    SUBJECT = RETRIEVAL_COMPLETED
    SCHEMA_VERSION = 6
    schema_version: int = 6

    chunks: list[EvidenceChunk] = Field(default_factory=list, max_length=100)
    scope_empty: bool = Field(
        default=False, description="The request's scope holds no indexed passage (no items, or none with text)"
    )
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
    quoted: bool = Field(
        default=False,
        description="The claim is the answer writer's rendering of a unit of this passage (a "
        "sentence, list item, table row with its headers, or the item's own record), not a claim "
        "a language model wrote",
    )
    joint: bool = Field(
        default=False,
        description="A bracket's joint check (version 3): `source_text` is the passages the "
        "bracket cites, in bracket order, joined by a blank line, and the question is whether they "
        "support the claim together. `chunk_index` and `occurrence` name the bracket's first "
        "occurrence; the per-index pairs of the bracket are sent beside it",
    )
    passage_starts: list[int] = Field(
        default_factory=list,
        max_length=MAX_JOINT_PASSAGES,
        description="A joint pair's passages: where each starts in `source_text` (the first at 0, "
        "increasing); empty for any other pair",
    )

    @model_validator(mode="after")
    def _joint_passages(self) -> VerificationPair:
        starts = self.passage_starts
        if not self.joint:
            if starts:
                raise ValueError("passage_starts is for a joint pair only")
            return self
        if len(starts) < 2 or starts[0] != 0:
            raise ValueError(f"a joint pair joins two passages or more, the first at 0; got passage_starts={starts}")
        if any(b <= a for a, b in zip(starts, starts[1:])) or starts[-1] >= len(self.source_text):
            raise ValueError(
                f"passage_starts must increase and lie within source_text ({len(self.source_text)} chars); got {starts}"
            )
        return self


#: Most unprinted numbers a pair score names (a claim rarely states more than a few).
MAX_UNPRINTED_NUMBERS = 8


class PairScore(BaseModel):
    """Support probability of one pair; `None` means not verified (fails open)."""

    model_config = ConfigDict(frozen=True)

    chunk_index: int = Field(ge=1)
    occurrence: int = Field(ge=1)
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    spans: list[TextSpan] = Field(
        default_factory=list,
        max_length=16,
        description="Where the passage best supports the claim: offsets into the pair's "
        "`source_text`, best first (the window the probability came from). Empty when the pair "
        "was not scored or the backend cannot say where (version 3)",
    )
    joint: bool = Field(default=False, description="The score of a joint pair (the pair's `joint`, echoed; version 4)")
    unprinted_numbers: list[Annotated[str, StringConstraints(max_length=32)]] = Field(
        default_factory=list,
        max_length=MAX_UNPRINTED_NUMBERS,
        description="Numbers the claim states in digits that the passage does not print, as the "
        "verifier's number rule read them ('35', '2.6'): why a capped score is low. Empty when "
        "there are none, the pair was not scored, or the backend does not apply the rule (version 5)",
    )


class VerificationRequested(Request):
    SUBJECT = VERIFICATION_REQUESTED
    # 2: a pair's `quoted` (a version 1 pair reads as not quoted). 3: joint pairs (`joint`,
    # `passage_starts`; an older pair reads as a pair of one passage)
    SCHEMA_VERSION = 3
    schema_version: int = 3

    pairs: list[VerificationPair] = Field(min_length=1, max_length=MAX_PAIRS)


class VerificationCompleted(Message):
    """Scores in the order of the request's pairs, which backend produced them, and the support
    threshold they are to be judged against (the verifier owns it; the gateway applies it)."""

    SUBJECT = VERIFICATION_COMPLETED
    # 2: `threshold`. 3: a score's `spans` (a version 2 score reads with none). 4: a score's
    # `joint` (an older score reads as a pair of one passage). 5: a score's `unprinted_numbers`
    # (an older score reads with none)
    SCHEMA_VERSION = 5
    schema_version: int = 5

    scores: list[PairScore] = Field(default_factory=list, max_length=MAX_PAIRS)
    provider: str = ""
    model: str = ""
    device: str = ""
    latency_ms: float = 0.0
    threshold: float = Field(default=SUPPORT_THRESHOLD, ge=0.0, le=1.0)
    error: ServiceError | None = None


# --- discovery ------------------------------------------------------------------------------


class DroppedCandidate(BaseModel):
    """A candidate left out because the user already owns it, and why."""

    model_config = ConfigDict(frozen=True)

    candidate: Candidate
    reason: str
    matched_item_key: str | None = None


#: A plain, bounded email address (the polite pools of Crossref, Unpaywall and NCBI want one).
ContactEmail = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=254, pattern=r"^[^\s@]+@[^\s@]+\.[^\s@]+$")
]


class DiscoveryRequested(Request):
    SUBJECT = DISCOVERY_REQUESTED
    SCHEMA_VERSION = 3  # 2: contact_email. 3: from_year
    schema_version: int = 3

    queries: list[str] = Field(min_length=1, max_length=8)
    from_year: int | None = Field(
        default=None, ge=1000, le=2999, description="Only works published in this year or later (None: any year)"
    )
    limit: int = Field(default=10, ge=1, le=50)
    library_id: Id | None = None
    contact_email: ContactEmail | None = Field(
        default=None,
        description="The user's contact for the providers' polite pools; None: the deployment's configured contact",
    )


class CandidatesFound(Message):
    SUBJECT = DISCOVERY_COMPLETED

    candidates: list[Candidate] = Field(default_factory=list, max_length=MAX_CANDIDATES)
    dropped: list[DroppedCandidate] = Field(default_factory=list, max_length=MAX_CANDIDATES)
    notes: list[str] = Field(
        default_factory=list, max_length=20, description="What the user should know: demo mode, budget spent, fallbacks"
    )
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


# --- the lab-hosted library ---------------------------------------------------------------

#: A page of a library sync stays well under NATS's 1 MB max_payload: 500 items whose text
#: fields are bounded below (the gateway also caps the request body at MAX_SYNC_BODY).
MAX_SYNC_ITEMS = 500
MAX_SYNC_DELETED = 5_000
MAX_NOTE_CHARS = 32_000
MAX_ABSTRACT_CHARS = 10_000
MAX_STATUS_FAILURES = 100
#: The largest sync request body the gateway reads, in bytes: a page must fit one bus message
#: (NATS max_payload is 1 MB) with its envelope.
MAX_SYNC_BODY = 768 * 1024
#: Collections and tags one synced item names, and collections one library has (sent whole).
MAX_ITEM_COLLECTIONS = 100
MAX_ITEM_TAGS = 200
MAX_SYNC_COLLECTIONS = 2_000
#: The attachment content types that are indexed; the gateway refuses an upload of any other.
UPLOAD_TYPES = frozenset(
    {
        "application/pdf",
        "application/epub+zip",
        "text/html",
        "application/xhtml+xml",
        "text/plain",
        "text/markdown",
        "text/x-markdown",
    }
)

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Text = Annotated[str, StringConstraints(max_length=2_000)]


class SyncedItem(BaseModel):
    """One Zotero item as the plugin sends it: a regular item, an attachment or a note.

    Attachments and notes name their `parent_key` (none when standalone). An attachment with
    a file carries its `content_type` and the SHA-256 of the file (lower-case hex), which
    tells the server whether the file must be uploaded again; a note carries its HTML.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: ItemKey
    item_type: str = Field(
        pattern=r"^[A-Za-z]{1,64}$", description="Zotero item type, e.g. journalArticle, attachment, note"
    )
    title: Text = ""
    creators: list[Creator] = Field(default_factory=list, max_length=100)
    date: str | None = Field(default=None, max_length=100, description="Zotero's date field as entered")
    year: int | None = Field(default=None, ge=0, le=3000)
    publication: Text | None = None
    doi: str | None = Field(default=None, max_length=256)
    url: str | None = Field(default=None, max_length=2_048)
    extra: str | None = Field(default=None, max_length=10_000)
    abstract: str | None = Field(
        default=None,
        max_length=MAX_ABSTRACT_CHARS,
        description="A regular item's Abstract field (`abstractNote`): indexed on its own, so the "
        "item answers before (or without) its file",
    )
    parent_key: ItemKey | None = None
    content_type: str | None = Field(default=None, max_length=255, pattern=r"^[a-z0-9.+-]+/[a-z0-9.+-]+$")
    sha256: Sha256 | None = None
    filename: str | None = Field(default=None, max_length=255)
    note: str | None = Field(default=None, max_length=MAX_NOTE_CHARS, description="A note's HTML")
    collections: list[ItemKey] = Field(
        default_factory=list,
        max_length=MAX_ITEM_COLLECTIONS,
        description="Keys of the collections the item is in (top-level items only: Zotero files children under their parent)",
    )
    tags: list[TagName] = Field(default_factory=list, max_length=MAX_ITEM_TAGS)

    @model_validator(mode="after")
    def _fields_fit_the_type(self) -> SyncedItem:
        if self.item_type != "attachment" and (self.sha256 or self.content_type or self.filename):
            raise ValueError(f"item {self.key}: sha256, content_type and filename belong to attachments only")
        if self.item_type != "note" and self.note is not None:
            raise ValueError(f"item {self.key}: note text belongs to notes only")
        if self.item_type in ("attachment", "note") and self.abstract is not None:
            raise ValueError(f"item {self.key}: an abstract belongs to regular items only")
        if self.item_type not in ("attachment", "note") and self.parent_key is not None:
            raise ValueError(f"item {self.key}: only attachments and notes have a parent_key")
        if self.parent_key == self.key:
            raise ValueError(f"item {self.key} cannot be its own parent")
        if self.parent_key is not None and self.collections:
            raise ValueError(f"item {self.key}: a child item is in no collection of its own")
        return self


class SyncedCollection(BaseModel):
    """One collection of a synced library; `parent_key` is the collection it sits in."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: ItemKey
    name: Text
    parent_key: ItemKey | None = None


class CatalogEntry(BaseModel):
    """A synced item as retrieval keeps it in the library catalog (KV key
    `i.<user>.<library>.<key>`, see `subjects.catalog_items_pattern`); discovery reads these to
    know what a hosted user owns."""

    sync_id: str
    item: SyncedItem


class LibrarySyncRequested(Request):
    """One page of a user's library metadata (no files: those are uploaded one by one).

    A sync is one or more pages sharing `sync_id`, numbered from 0; the last one says
    `final`. `items` are created or replaced, `deleted` keys are removed with their files and
    index entries. A `full` sync lists the whole library: once every page of it has arrived,
    the items of `library_id` that it did not list are removed as well.

    `collections`, when present, is the library's whole collection tree and replaces the one
    stored (the plugin sends it on the first page of a sync whenever it changed); an item's
    `collections` and `tags` place it there. Version 2: both. Version 3: an item's `abstract`.
    """

    SUBJECT = LIBRARY_SYNC_REQUESTED
    SCHEMA_VERSION = 3
    schema_version: int = 3

    library_id: LibraryId = "user"
    sync_id: Id
    page: int = Field(default=0, ge=0, le=100_000)
    final: bool = True
    full: bool = False
    items: list[SyncedItem] = Field(default_factory=list, max_length=MAX_SYNC_ITEMS)
    deleted: list[ItemKey] = Field(default_factory=list, max_length=MAX_SYNC_DELETED)
    collections: list[SyncedCollection] | None = Field(
        default=None,
        max_length=MAX_SYNC_COLLECTIONS,
        description="The library's whole collection tree, replacing the stored one; None: unchanged",
    )

    @model_validator(mode="after")
    def _unique_keys(self) -> LibrarySyncRequested:
        keys = [i.key for i in self.items]
        if len(set(keys)) != len(keys):
            raise ValueError("items: each key may appear once per page")
        if set(keys) & set(self.deleted):
            raise ValueError("a key cannot be both in items and in deleted")
        collection_keys = [c.key for c in self.collections or []]
        if len(set(collection_keys)) != len(collection_keys):
            raise ValueError("collections: each key may appear once")
        return self


class LibrarySynced(Message):
    """What a sync page changed, and which attachments of it still need their file uploaded."""

    SUBJECT = LIBRARY_SYNC_COMPLETED

    library_id: LibraryId = "user"
    sync_id: str = Field(default="", max_length=64)  # defaults: the bus builds error replies on its own
    page: int = 0
    stored: int = 0
    deleted: int = 0
    needs_upload: list[ItemKey] = Field(default_factory=list, max_length=MAX_SYNC_ITEMS)
    complete: bool = Field(
        default=False,
        description="Every page of this sync has arrived (and, for a full sync, the items it did not list are removed)",
    )
    error: ServiceError | None = None


class AttachmentUploaded(Request):
    """Claim-check of an uploaded attachment file: the bytes are in the `LIBRARY_BUCKET` object
    store under `object_name` (see `subjects.library_object_name`), never in this message."""

    SUBJECT = LIBRARY_UPLOAD_REQUESTED

    library_id: LibraryId = "user"
    key: ItemKey
    object_name: str = Field(min_length=1, max_length=512)
    sha256: Sha256
    size: int = Field(ge=1)
    content_type: str = Field(max_length=255, pattern=r"^[a-z0-9.+-]+/[a-z0-9.+-]+$")


class AttachmentAccepted(Message):
    """The upload is recorded (`queued` for indexing, or `unchanged`: that file is already
    indexed); or `error.code="invalid"` when the key is no attachment of the synced library."""

    SUBJECT = LIBRARY_UPLOAD_COMPLETED

    library_id: LibraryId = "user"
    key: str = Field(default="", max_length=8)
    status: Literal["queued", "unchanged", "rejected"] = "rejected"
    error: ServiceError | None = None


class LibraryStatusRequested(Request):
    """Ingest progress of the requesting user's library; with `rescan`, index it again first."""

    SUBJECT = LIBRARY_STATUS_REQUESTED
    SCHEMA_VERSION = 2  # 2: rescan
    schema_version: int = 2

    rescan: bool = Field(
        default=False,
        description="Re-index the library now (incremental: only "
        "what changed), e.g. right after the plugin imported papers into it",
    )


class IngestFailure(BaseModel):
    """An attachment or note that could not be indexed, and why."""

    model_config = ConfigDict(frozen=True)

    library_id: str
    source_key: str
    item_key: str
    title: str = ""
    reason: str = Field(description="encrypted, corrupt, empty, scanned, missing, unsupported, timeout, ...")
    detail: str = ""


class LibraryStatus(Message):
    """Where the user's library stands: what was synced and uploaded, what is indexed, what failed.

    `source`: `zotero_dir` (a Zotero data directory the server reads), `demo` (the bundled demo
    library, read when this machine has no Zotero library), `hosted` (synced by the plugin) or
    `none`."""

    SUBJECT = LIBRARY_STATUS_COMPLETED
    SCHEMA_VERSION = 4  # 2: source "demo". 3: abstracts, pages, pages_per_s, eta_s. 4: files_searchable
    schema_version: int = 4

    source: Literal["zotero_dir", "demo", "hosted", "none"] = "none"
    state: Literal["idle", "running", "done", "stopped", "failed"] = "idle"
    ready: bool = False
    items: int = Field(default=0, description="Regular items (not attachments or notes)")
    attachments: int = Field(default=0, description="Attachment files in the library (indexed or not)")
    uploaded: int = Field(default=0, description="Hosted: attachments whose current file has been uploaded")
    awaiting_upload: int = Field(default=0, description="Hosted: attachments whose file is still to upload")
    sources_total: int = 0
    sources_done: int = 0
    indexed: int = 0
    chunks_indexed: int | None = None
    abstracts: int = Field(default=0, description="Items whose abstract is searchable (indexed before their files)")
    files_searchable: int = Field(
        default=0,
        description="Files of the last run whose full text is searchable by its words (read; embedded later)",
    )
    pages: int = Field(default=0, description="Pages converted by the last run")
    pages_per_s: float | None = Field(default=None, description="The last run's pace while converting files")
    eta_s: float | None = Field(
        default=None, description="While indexing: seconds left for the files, at the pace so far; None until known"
    )
    failures_by_reason: dict[str, int] = Field(default_factory=dict)
    failures: list[IngestFailure] = Field(default_factory=list, max_length=MAX_STATUS_FAILURES)
    last_sync_at: datetime | None = None
    error: ServiceError | None = None


# --- looking items up in the user's library --------------------------------------------------

MAX_LOOKUP_IDS = 20
MAX_LOOKUP_TITLES = 5
MAX_LOOKUP_MATCHES = 50
MAX_LOOKUP_AUTHORS = 5
LookupTitle = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


class LookupAuthor(BaseModel):
    """A paper named by an author: "Datta et al." (any creator's family name, compared as titles
    are), "Kaur et al. 2021" (and the item's year)."""

    model_config = ConfigDict(frozen=True)

    family: str = Field(min_length=1, max_length=100)
    year: int | None = Field(default=None, ge=1000, le=2999)


def _canonical(values: list[str], normalize, what: str) -> list[str]:
    out = []
    for value in values:
        canonical = normalize(value)
        if canonical is None:
            raise ValueError(f"{value!r} is not {what}")
        out.append(canonical)
    return list(dict.fromkeys(out))


class LibraryLookupRequested(Request):
    """Which items of the requesting user's own library carry these identifiers, or exactly one
    of these titles, or a creator of this family name? Identifiers are made canonical on the way
    in (`zocrates_contracts.identifiers`), so every reader compares one form: DOIs lower case
    without a resolver prefix, arXiv ids without their version, PMIDs as digits. Titles and
    family names match when equal after `normalize_title` (case, punctuation, diacritics and
    markup aside). Version 2: `authors`."""

    SUBJECT = LIBRARY_LOOKUP_REQUESTED
    SCHEMA_VERSION = 2
    schema_version: int = 2

    dois: list[str] = Field(default_factory=list, max_length=MAX_LOOKUP_IDS)
    arxiv_ids: list[str] = Field(default_factory=list, max_length=MAX_LOOKUP_IDS)
    pmids: list[str] = Field(default_factory=list, max_length=MAX_LOOKUP_IDS)
    titles: list[LookupTitle] = Field(default_factory=list, max_length=MAX_LOOKUP_TITLES)
    authors: list[LookupAuthor] = Field(default_factory=list, max_length=MAX_LOOKUP_AUTHORS)

    @field_validator("dois")
    @classmethod
    def _dois(cls, values: list[str]) -> list[str]:
        return _canonical(values, normalize_doi, "a DOI (expected e.g. 10.1038/nature12373)")

    @field_validator("arxiv_ids")
    @classmethod
    def _arxiv_ids(cls, values: list[str]) -> list[str]:
        return _canonical(values, normalize_arxiv, "an arXiv id (expected e.g. 2203.00130 or hep-th/9901001)")

    @field_validator("pmids")
    @classmethod
    def _pmids(cls, values: list[str]) -> list[str]:
        return _canonical(values, normalize_pmid, "a PubMed id (expected digits, e.g. 20205926)")

    @model_validator(mode="after")
    def _something_to_look_up(self) -> LibraryLookupRequested:
        if not (self.dois or self.arxiv_ids or self.pmids or self.titles or self.authors):
            raise ValueError("a lookup needs at least one DOI, arXiv id, PMID, title or author")
        return self


class LibraryItemMatch(BaseModel):
    """An item of the user's library that carries a looked-up identifier or title."""

    model_config = ConfigDict(frozen=True)

    item_key: ItemKey
    library_id: LibraryId
    library_name: str = Field(default="", max_length=2_000, description="`My Library` or the group's name")
    title: str = Field(default="", max_length=2_000)
    creators: list[Creator] = Field(default_factory=list, max_length=100)
    year: int | None = None
    publication: str | None = Field(default=None, max_length=2_000)
    doi: str | None = Field(default=None, max_length=256, description="Canonical (lower case, no resolver)")
    arxiv_id: str | None = Field(default=None, max_length=64)
    pmid: str | None = Field(default=None, max_length=16)
    collections: list[str] = Field(
        default_factory=list,
        max_length=100,
        description=('Collection paths ("Parent/Child"); a lab-hosted library\'s sync carries none yet'),
    )
    matched_by: Literal["doi", "arxiv", "pmid", "title", "author"]
    matched: str = Field(max_length=500, description="The requested identifier, title or family name it matched")


class LibraryItemsFound(Message):
    """The items matching a `LibraryLookupRequested`, one entry per (item, requested identifier).
    Version 2: an item may be matched by an author."""

    SUBJECT = LIBRARY_LOOKUP_COMPLETED
    SCHEMA_VERSION = 2
    schema_version: int = 2

    items: list[LibraryItemMatch] = Field(default_factory=list, max_length=MAX_LOOKUP_MATCHES)
    searched_items: int = Field(
        default=0,
        ge=0,
        description="Regular items of the user's library that were checked (0: no library of this user is here)",
    )
    error: ServiceError | None = None


# --- the library's collections and tags (the scope a question may be asked in) ----------------

MAX_OUTLINE_LIBRARIES = 500
MAX_OUTLINE_ENTRIES = 5_000


class LibraryOutlineRequested(Request):
    """The requesting user's libraries with their collections, or with their tags: what a
    question's scope (`RetrievalScope`) may name."""

    SUBJECT = LIBRARY_OUTLINE_REQUESTED

    part: Literal["collections", "tags"]


class OutlineLibrary(BaseModel):
    model_config = ConfigDict(frozen=True)

    library_id: LibraryId
    name: str = Field(default="", max_length=2_000, description="`My Library` or the group's name")


class OutlineCollection(BaseModel):
    model_config = ConfigDict(frozen=True)

    library_id: LibraryId
    key: ItemKey
    name: str = Field(max_length=2_000)
    parent_key: ItemKey | None = None
    items: int = Field(default=0, ge=0, description="Items directly in the collection (not in its subcollections)")


class OutlineTag(BaseModel):
    model_config = ConfigDict(frozen=True)

    library_id: LibraryId
    tag: str = Field(max_length=MAX_TAG_CHARS)
    items: int = Field(default=0, ge=0, description="Items that carry the tag")


class LibraryOutline(Message):
    """The answer to `LibraryOutlineRequested`: the part asked for, in name order, at most
    `MAX_OUTLINE_ENTRIES` of it (`truncated` says when there were more)."""

    SUBJECT = LIBRARY_OUTLINE_COMPLETED

    libraries: list[OutlineLibrary] = Field(default_factory=list, max_length=MAX_OUTLINE_LIBRARIES)
    collections: list[OutlineCollection] = Field(default_factory=list, max_length=MAX_OUTLINE_ENTRIES)
    tags: list[OutlineTag] = Field(default_factory=list, max_length=MAX_OUTLINE_ENTRIES)
    truncated: bool = False
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
    LibrarySyncRequested,
    LibrarySynced,
    AttachmentUploaded,
    AttachmentAccepted,
    LibraryStatusRequested,
    LibraryStatus,
    LibraryLookupRequested,
    LibraryItemsFound,
    LibraryOutlineRequested,
    LibraryOutline,
)

#: The reply class of each request class, so the bus can answer with an error on its own.
REPLY_OF: dict[type[Request], type[Message]] = {
    RetrievalRequested: EvidenceRetrieved,
    VerificationRequested: VerificationCompleted,
    DiscoveryRequested: CandidatesFound,
    RecheckRequested: CandidatesRechecked,
    StagingRequested: BatchStaged,
    LibrarySyncRequested: LibrarySynced,
    AttachmentUploaded: AttachmentAccepted,
    LibraryStatusRequested: LibraryStatus,
    LibraryLookupRequested: LibraryItemsFound,
    LibraryOutlineRequested: LibraryOutline,
}
