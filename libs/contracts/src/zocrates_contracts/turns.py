"""The resolved turn: the SSE `done` payload, stored with the session and returned on reload.

These models are produced by the citation core (`zocrates_citations`) and the gateway, and
read by the plugin; the JSON Schemas exported from them are the plugin's contract too.

`TurnRecord` is versioned like a bus message: a record is written at `SCHEMA_VERSION`, older
records decode (new fields take their defaults), a newer one is refused. Records stored
before version 2 have no `schema_version` key and no `prose`/`sources`: the gateway upgrades
them when it reads a stored session (`zocrates_citations.upgrade_turn_record`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator, model_validator

from zocrates_contracts.base import LIBRARY_ID_PATTERN
from zocrates_contracts.candidates import Candidate
from zocrates_contracts.evidence import Creator, Pages
from zocrates_contracts.scopes import RetrievalScope

Verdict = Literal["KEPT", "DEMOTED", "FAIL_OPEN"]

#: The support probability a citation occurrence needs to be kept when nothing else says: the
#: verifier's default (`ZOCRATES_VERIFIER_THRESHOLD`), which its replies carry to the gateway.
SUPPORT_THRESHOLD = 0.60

#: A scope's label is a line under the question ("Collection: Thrombosis (with subcollections)").
MAX_SCOPE_LABEL_CHARS = 300


class TextSpan(BaseModel):
    """The characters `text[start:end]` of a passage."""

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> TextSpan:
        if self.end <= self.start:
            raise ValueError(f"a span ends after it starts; got start={self.start}, end={self.end}")
        return self


class CitationOccurrence(BaseModel):
    """One occurrence of a citation token in the answer, judged on its own."""

    model_config = ConfigDict(frozen=True)

    occurrence: int = Field(ge=1, description="1-based count of this chunk index's tokens, in document order")
    claim: str = Field(description="The claim the token attributes, as sent to the verifier")
    compound: bool = Field(default=False, description="The bracket held more than one valid index")
    probability: float | None = Field(default=None, ge=0.0, le=1.0)
    verdict: Verdict
    quoted: bool = Field(
        default=False,
        description="The claim is a verbatim quote of the cited passage (one "
        "of its answer units), not a claim written about it: the verifier's score says little",
    )
    relevance: float | None = Field(
        default=None,
        description="For a quote: the question-relevance score that "
        "chose it (not a probability; higher is more relevant)",
    )
    spans: list[TextSpan] = Field(
        default_factory=list,
        max_length=16,
        description="Where the cited passage best supports the claim: offsets into the citation's "
        "`quote` (`quote[start:end]`), best first, as the verifier found them. Set on KEPT "
        "occurrences scored by a verifier that can say where (version 4); empty otherwise",
    )
    joint_support: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="The bracket as a whole (version 6): the verifier's support probability of the "
        "claim by the bracket's passages joined, ALCE's citation recall of the bracket. Set on every "
        "occurrence of a bracket citing two passages or more when that joint check was scored; None "
        "otherwise (one passage, not scored, or stored before version 6)",
    )
    unprinted_numbers: list[str] = Field(
        default_factory=list,
        description="Numbers the claim states in digits that the cited passage does not print, as the "
        "verifier's number rule read them (version 7): why the occurrence scored low. Empty when there "
        "are none, it was not scored, the verifier does not apply the rule, or stored before version 7",
    )


class Citation(BaseModel):
    """A chunk cited at least once by a valid token, with every occurrence and its verdict."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=1)
    chunk_id: str
    item_key: str
    library_id: str = Field(
        default="user",
        max_length=40,
        pattern=LIBRARY_ID_PATTERN,
        description="The Zotero library of the item: `user` (My Library) or "
        "`group-<groupID>`; item keys are unique only within one library",
    )
    attachment_key: str | None = None
    title: str = ""
    authors: str = Field(default="", description="APA label: Smith / Smith & Jones / Smith et al.")
    creators: list[Creator] = Field(default_factory=list)
    year: int | None = None
    section: str | None = None
    publication: str | None = None
    kind: str = "text"
    pages: Pages | None = Field(
        default=None, description="The pages the cited passage sits on (version 4; none before, and for notes)"
    )
    quote: str = Field(description="The full chunk text unless a quote limit is configured")
    occurrences: list[CitationOccurrence] = Field(default_factory=list)
    survives: bool = Field(description="At least one occurrence survived verification")


class CitedOccurrence(BaseModel):
    """One occurrence of one citation: a row of the claim verification inspector."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=1, description="The chunk index the token cited (`Citation.index`)")
    occurrence: int = Field(ge=1, description="`CitationOccurrence.occurrence` of that citation")


class UnsupportedClaim(BaseModel):
    """A claim of the answer whose every citation failed verification (all DEMOTED).

    Its tokens are pruned from `prose`, so it would read as an accepted uncited statement; the
    client marks it, removes it or leaves it, as the user chose. Positions are offsets in
    `prose` (Python string indices: code points).
    """

    model_config = ConfigDict(frozen=True)

    start: int = Field(ge=0, description="Where the claim starts in `prose`")
    end: int = Field(
        ge=0,
        description="Where it ends: after its sentence's closing punctuation when the claim is a "
        "whole sentence, else where its pruned citation stood; `prose[start:end]` is what removal cuts",
    )
    at: int = Field(ge=0, description="Where its pruned citation stood in `prose`: where a marker goes")
    claim: str = Field(description="The claim as the verifier judged it")
    probability: float = Field(ge=0.0, le=1.0, description="The best support probability of its occurrences")
    unprinted_numbers: list[str] = Field(
        default_factory=list,
        description="Numbers the claim states that none of its cited passages prints (each of its "
        "occurrences' `unprinted_numbers`), for the marker to say why; empty when any passage prints "
        "them all or failed for another reason (version 7)",
    )
    occurrences: list[CitedOccurrence] = Field(min_length=1, description="Its occurrences, in the inspector")

    @model_validator(mode="after")
    def _ordered(self) -> UnsupportedClaim:
        if not self.start <= self.at <= self.end:
            raise ValueError(f"expected start <= at <= end, got {self.start}, {self.at}, {self.end}")
        return self


class SourceRef(BaseModel):
    """One item in `# Cited Sources` or `## Other Considered Sources`."""

    model_config = ConfigDict(frozen=True)

    item_key: str
    library_id: str = Field(
        default="user",
        max_length=40,
        pattern=LIBRARY_ID_PATTERN,
        description="The Zotero library of the item: `user` (My Library) or "
        "`group-<groupID>`; item keys are unique only within one library",
    )
    title: str = ""
    authors: str = ""
    year: int | None = None
    publication: str | None = None
    abstract_only: bool = Field(
        default=False,
        description="All the turn read of this item is its abstract (Zotero's Abstract field): no "
        "passage of a file of it was among the evidence, e.g. while its PDF is still being indexed",
    )


class References(BaseModel):
    model_config = ConfigDict(frozen=True)

    cited: list[SourceRef] = Field(default_factory=list)
    considered: list[SourceRef] = Field(default_factory=list)
    considered_summary: str | None = Field(
        default=None,
        max_length=200,
        description=(
            "The considered tier's summary line when it is not the usual count, e.g. \"Searched 12 "
            "passages from 5 items\" under an answer that found nothing"
        ),
    )


class VerificationSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    enabled: bool = True
    provider: str = ""
    model: str = ""
    threshold: float = SUPPORT_THRESHOLD  # the one the verifier reported and the verdicts applied
    total: int = 0
    kept: int = 0
    demoted: int = 0
    fail_open: int = 0
    latency_ms: float = 0.0
    note: str | None = None


class CitationQuality(BaseModel):
    """How well an answer's claims are cited, after ALCE's citation recall and precision, judged
    with the verifier's per-pair probabilities (a citation supports its claim when its
    probability reaches the applied threshold), and with each compound bracket's joint check (its
    passages together support the claim when `joint_support` reaches that threshold: the sentence
    is supported). The formulas are in docs/api.md. Unverified (FAIL_OPEN) citations count
    neither way: not as support, not against precision."""

    model_config = ConfigDict(frozen=True)

    claims: int = Field(default=0, ge=0, description="Claim sentences of the answer")
    supported: int = Field(
        default=0,
        ge=0,
        description="Claim sentences with at least one supporting citation, or a bracket whose "
        "passages support it together (`CitationOccurrence.joint_support`, version 6)",
    )
    uncited: int = Field(default=0, ge=0, description="Claim sentences with no citation")
    unverified: int = Field(
        default=0,
        ge=0,
        description="Cited claim sentences whose every citation went unverified (FAIL_OPEN) and "
        "whose brackets got no joint score",
    )
    citations: int = Field(default=0, ge=0, description="Verified citation occurrences (KEPT and DEMOTED)")
    supporting: int = Field(default=0, ge=0, description="Verified citations that support their claim (KEPT)")

    @computed_field
    @property
    def recall(self) -> float | None:
        """Supported claim sentences over claim sentences, unverified ones left out; None for none."""
        judged = self.claims - self.unverified
        return self.supported / judged if judged else None

    @computed_field
    @property
    def precision(self) -> float | None:
        """Supporting citations over verified citations; None when none was verified."""
        return self.supporting / self.citations if self.citations else None


#: What a numbered span of a passage is (`zocrates_citations.segment_source_text` cuts them).
SpanKind = Literal["sentence", "heading", "table_row", "math", "code"]


class AttributedSpan(BaseModel):
    """One numbered span of a cited passage (`zocrates_citations.segment_source_text`): a
    sentence, a heading, a table row, a display-math or code block."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=1, description="Its number, 1..N in reading order")
    start: int = Field(ge=0, description="Offset into the citation's `quote`")
    end: int = Field(ge=1, description="`quote[start:end]` is the span")
    kind: SpanKind = "sentence"
    probability: float | None = Field(
        default=None, ge=0.0, le=1.0, description="The verifier's support probability of the claim by this span alone"
    )


class SentenceAttribution(BaseModel):
    """Which sentences (and table rows) of a cited passage state what one citation occurrence's
    claim says, and which facts of the claim none of them states (seed 4.5, item 10)."""

    model_config = ConfigDict(frozen=True)

    citation_index: int = Field(ge=1)
    occurrence: int = Field(ge=1)
    claim: str
    method: Literal["verifier", "llm"] = Field(
        description="`llm`: the attribution role's language model read the numbered passage; "
        "`verifier`: each span was scored against the claim, offline"
    )
    model: str = Field(default="", description="The language model or the verifier model that judged")
    spans: list[AttributedSpan] = Field(default_factory=list, description="The passage, every span of it")
    supporting: list[int] = Field(default_factory=list, description="Numbers of the spans that support the claim")
    unsupported_facts: list[str] = Field(
        default_factory=list, max_length=64, description="What the claim says that no supporting span states"
    )
    explanation: str | None = Field(default=None, max_length=2_000, description="The model's note (llm only)")
    note: str | None = Field(default=None, description="A caveat, e.g. that the model failed and the verifier judged")
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class TurnError(BaseModel):
    """Why a turn ended without an answer, as its `error` event said it."""

    model_config = ConfigDict(frozen=True)

    code: str = Field(
        description="Machine-readable, e.g. `timeout`, `retrieval_not_available`, `cancelled`, `internal`"
    )
    message: str


class TurnRecord(BaseModel):
    """A finished turn exactly as the user saw it.

    Version 2 also types `candidates` (they were plain dicts of the same fields). Version 3 keeps
    a turn that ended in an error too (`error` set, `prose` what had streamed before it), and
    `coordinator_view`, what a follow-up question in the same session is answered with. Version
    4: each occurrence's supporting `spans`, the answer's citation `quality`, each citation's
    `pages` (the printed page numbers), the sentence-level `attributions` asked for, and the
    `scope` the question was asked in with its `scope_label`. Version 5 lists the claims whose
    every citation failed verification (`unsupported`); older records decode with none. Version
    6: each occurrence of a bracket citing several passages carries the bracket's `joint_support`
    (older records decode with none), and `quality` counts a sentence supported by it. Version 7:
    each occurrence and unsupported claim carries the `unprinted_numbers` that made it fail
    (older records decode with none).

    The answer travels in two parts: `prose` (what the client renders, with its citation
    tokens) and `sources` (the source sections, for clients that show markdown as is; the
    sidebar renders the tiers from `references`). `text` is `prose + sources`, byte for byte,
    so a client written before version 2 keeps reading `text` as it did.
    """

    model_config = ConfigDict(frozen=True)

    # 2: prose and sources apart from text; typed candidates. 3: error, memory. 4: spans, quality,
    # pages, attributions, scope. 5: unsupported claims. 6: an occurrence's joint_support.
    # 7: unprinted numbers of an occurrence and of an unsupported claim
    SCHEMA_VERSION: ClassVar[int] = 7

    schema_version: int = 7
    turn_id: str
    session_id: str
    intent: Literal["library", "discovery", "chat"]
    question: str
    scope: RetrievalScope | None = Field(
        default=None,
        description="Where in the library the question was asked (version 4); None: the whole library, "
        "and in turns stored before it",
    )
    scope_label: str = Field(
        default="",
        max_length=MAX_SCOPE_LABEL_CHARS,
        description="The scope as the user chose it, one short line (\"Tag: review\", \"This PDF\"); "
        "empty when `scope` is None",
    )
    text: str = Field(
        default="",
        description="Enriched markdown, exactly `prose + sources` (kept for "
        "clients before version 2); derived from them when not given",
    )
    prose: str = Field(
        default="",
        description="The answer without its source sections: markdown with "
        "the surviving [n] tokens (empty in a version 1 record: split `text`)",
    )
    sources: str = Field(
        default="",
        description="The source sections that end `text` (`# Cited Sources`, "
        "`## Other Considered Sources`, with data-item-key hooks); empty when none",
    )
    citations: list[Citation] = Field(default_factory=list)
    unsupported: list[UnsupportedClaim] = Field(
        default_factory=list,
        description="Claims whose every citation failed verification, in `prose` order (version 5; "
        "none before): the client marks, removes or leaves them as the user chose",
    )
    references: References = Field(default_factory=References)
    verification: VerificationSummary | None = None
    quality: CitationQuality | None = Field(
        default=None,
        description="Citation recall and precision of the answer (version 4); None for a turn "
        "without citations to judge (no retrieval, citations off, or before version 4)",
    )
    candidates: list[Candidate] = Field(
        default_factory=list,
        description="Discovery candidates, numbered "
        "[1]..[n] in the prose (a version 1 record's plain dicts decode as these)",
    )
    notes: list[str] = Field(default_factory=list, description="Caveats shown with the answer (e.g. demo mode)")
    coordinator_view: str = Field(
        default="",
        description="The answer as later turns of the session see it: author-year citations and a "
        "plain bibliography, no item keys or chunk numbers (version 3; empty before)",
    )
    error: TurnError | None = Field(
        default=None, description="Set when the turn ended in an `error` event instead of `done` (version 3)"
    )
    attributions: list[SentenceAttribution] = Field(
        default_factory=list,
        description="Sentence-level attributions obtained on demand (`POST /citations/sentence_attribution`), "
        "one per citation occurrence at most (version 4)",
    )
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    completed_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @model_validator(mode="before")
    @classmethod
    def _versioned_parts(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "schema_version" not in data and "text" in data and not {"prose", "sources"} & data.keys():
            return {**data, "schema_version": 1}  # stored before version 2, which added the key
        if "text" not in data:
            return {**data, "text": data.get("prose", "") + data.get("sources", "")}
        return data

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value < 1 or value > cls.SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is not readable by this build of {cls.__name__} "
                f"(knows 1..{cls.SCHEMA_VERSION}); upgrade this service"
            )
        return value

    @model_validator(mode="after")
    def _unsupported_within_prose(self) -> TurnRecord:
        for claim in self.unsupported:
            if claim.end > len(self.prose):
                raise ValueError(f"an unsupported claim ends at {claim.end}, past the prose ({len(self.prose)} chars)")
        return self

    @model_validator(mode="after")
    def _text_is_prose_and_sources(self) -> TurnRecord:
        if self.schema_version >= 2 and self.text != self.prose + self.sources:
            raise ValueError(
                "text must be exactly prose + sources in a version 2 record; give prose and sources "
                "and leave text out (it is derived), or upgrade a version 1 record with "
                "zocrates_citations.upgrade_turn_record"
            )
        return self
