"""A paper found online: what discovery finds, a discovery turn records, staging downloads.

Its own module because both the bus messages (`messages`) and the stored turn (`turns`) hold
candidates.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from zocrates_contracts.base import Id


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
