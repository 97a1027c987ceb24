"""Bibliographic evidence as it travels between retrieval, the gateway and the citation core."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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


class EvidenceChunk(BaseModel):
    """A passage of the user's library, ranked by relevance for one turn.

    `item_key` is always the bibliographic (parent) item; `attachment_key` is the file the
    text came from, when there is one. Keys never reach a prompt or visible text.
    """

    model_config = ConfigDict(frozen=True)

    chunk_id: str = Field(min_length=1)
    item_key: str = Field(min_length=1)
    library_id: str = Field(default="user", max_length=40, pattern=r"^(user|group-[0-9]{1,20})$",
                            description="The Zotero library of the item: `user` (My Library) or "
                            "`group-<groupID>`; item keys are unique only within one library")
    attachment_key: str | None = None
    title: str = ""
    creators: list[Creator] = Field(default_factory=list)
    year: int | None = None
    section: str | None = None
    publication: str | None = None
    text: str
    score: float | None = None
    kind: Literal["text", "table", "abstract", "note", "figure"] | str = "text"
