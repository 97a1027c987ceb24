"""Bibliographic evidence as it travels between retrieval, the gateway and the citation core."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from zocrates_contracts.base import LIBRARY_ID_PATTERN


class Creator(BaseModel):
    """One creator of a Zotero item.

    Two-field names use `first_name`/`last_name`; single-field names (institutions,
    mononyms) use `name`, which is always shown whole.
    """

    model_config = ConfigDict(frozen=True)

    first_name: str = ""
    last_name: str = ""
    name: str = ""
    creator_type: str = "author"


#: What a unit of a passage is. Quotable: `sentence`, `list_item`, `table_row`. The rest is
#: named so that nobody downstream has to guess from the text: a table's `caption` and
#: `table_header`, a `footnote` (correspondence, licence, copyright lines), a `title_block`
#: (article type, title, author list), an `affiliation` line, a `term_list` (a paper's keywords or
#: abbreviations, a search strategy's quoted terms: quotable when asked for them) and a `fragment`
#: (a piece cut at a page, column or chunk boundary, or figure text, which is no whole statement).
UnitKind = Literal[
    "sentence",
    "list_item",
    "table_row",
    "caption",
    "table_header",
    "footnote",
    "title_block",
    "affiliation",
    "term_list",
    "fragment",
]
QUOTABLE_UNITS: frozenset[str] = frozenset({"sentence", "list_item", "table_row"})
#: The units retrieval scores against the query: all an answer may quote when the question asks
#: for them (a caption, a funding footnote), not fragments or header rows.
SCORED_UNITS: frozenset[str] = frozenset(
    {"sentence", "list_item", "table_row", "caption", "footnote", "title_block", "affiliation", "term_list"}
)

#: Where a passage sits in its document: the `abstract`, the `body`, the `back_matter`
#: (acknowledgements, funding, declarations, author details, ...), the `front_matter` (title and
#: author block before the abstract), a Zotero `note` or the researcher's `annotation`s.
SectionRole = Literal["abstract", "body", "back_matter", "front_matter", "note", "annotation"]

#: What a question may ask of a paper's back matter. The gateway reads it from the question and
#: sends it with the search (`RetrievalRequested.back_matter`); retrieval, which knows the
#: headings, ranks the sections that answer it first.
BackMatterTopic = Literal[
    "funding",
    "acknowledgements",
    "competing_interests",
    "contributions",
    "affiliations",
    "ethics",
    "data_availability",
    "abbreviations",
    "supplementary",
    "licence",
]


class AnswerUnit(BaseModel):
    """One unit of a passage an answer can quote: `passage.text[start:end]`, classified by
    retrieval at ingest. A table row's `text` is what it reads as on its own, with its
    table's caption and the column headers it needs ("Table 1 (Patient flow): Day shift —
    Admissions: 41%"); other units leave `text` empty (the span is the text)."""

    model_config = ConfigDict(frozen=True)

    kind: UnitKind | str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str = ""
    similarity: float | None = Field(
        default=None,
        description="Cosine similarity of the unit and the query (the retrieval embedding model), set at search time",
    )

    def shown(self, passage: str) -> str:
        """The unit as it reads on its own."""
        return self.text or passage[self.start : self.end]


class Pages(BaseModel):
    """The pages of its file a passage sits on: the first, and the last when it runs on.

    `index` is the page's 0-based place in the file, what Zotero's reader navigates by
    (`{pageIndex}`; a `zotero://open-pdf/...?page=` link takes `index + 1`). `label` is the
    number printed on it, which is what a reader cites ("p. 1234" in a journal issue, "iv" in a
    preface): the PDF's own page labels, else the number in its running header or footer, else
    `index + 1` with `printed` false."""

    model_config = ConfigDict(frozen=True)

    index: int = Field(ge=0, description="0-based index of the first page in the file")
    label: str = Field(min_length=1, max_length=32, description="The first page's printed number")
    last_index: int | None = Field(
        default=None, ge=0, description="The last page's index, when the passage spans pages"
    )
    last_label: str | None = Field(default=None, min_length=1, max_length=32, description="The last page's label")
    printed: bool = Field(
        default=True, description="The labels are the document's own; false: no number was found, `label` is index + 1"
    )

    def shown(self) -> str:
        """How a citation names them: "p. 12", or "pp. 12–13" when the passage spans pages."""
        if self.last_label is not None and self.last_index != self.index:
            return f"pp. {self.label}–{self.last_label}"
        return f"p. {self.label}"


class EvidenceChunk(BaseModel):
    """A passage of the user's library, ranked by relevance for one turn.

    `item_key` is always the bibliographic (parent) item; `attachment_key` is the file the
    text came from, when there is one. Keys never reach a prompt or visible text.
    """

    model_config = ConfigDict(frozen=True)

    chunk_id: str = Field(min_length=1)
    item_key: str = Field(min_length=1)
    library_id: str = Field(
        default="user",
        max_length=40,
        pattern=LIBRARY_ID_PATTERN,
        description="The Zotero library of the item: `user` (My Library) or "
        "`group-<groupID>`; item keys are unique only within one library",
    )
    attachment_key: str | None = None
    title: str = ""
    creators: list[Creator] = Field(default_factory=list)
    year: int | None = None
    section: str | None = None
    publication: str | None = None
    citation_key: str | None = Field(
        default=None,
        max_length=256,
        description="The item's Better BibTeX key (a `Citation Key:` line in its Extra field), when it has one",
    )
    text: str
    score: float | None = None
    kind: Literal["text", "table", "abstract", "note", "figure"] | str = "text"
    role: SectionRole | str = "body"
    units: list[AnswerUnit] = Field(
        default_factory=list, max_length=2_000, description="The passage's units in reading order (see AnswerUnit)"
    )
    pages: Pages | None = Field(
        default=None, description="The pages of its file the passage sits on (PDFs and annotations; else none)"
    )
    position: int | None = Field(
        default=None,
        ge=0,
        description="Where the passage stands in its source, counting its passages from 0 (version 5: the "
        "source's opening passage is the one of least position); None from an older retrieval",
    )
