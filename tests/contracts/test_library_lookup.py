"""The library lookup contract and the retrieval scope (issue 14): identifiers are canonical on
the wire, bad ones are refused clearly, and a version-1 retrieval request still decodes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from zocrates_contracts import (
    REPLY_OF,
    LibraryItemMatch,
    LibraryItemsFound,
    LibraryLookupRequested,
    RetrievalRequested,
)
from zocrates_contracts.subjects import LIBRARY_LOOKUP_COMPLETED, LIBRARY_LOOKUP_REQUESTED

ENVELOPE = {"turn_id": "t", "session_id": "s", "user_id": "u", "reply_to": "zocrates.reply.gw.library"}


def test_identifiers_travel_in_one_canonical_form():
    request = LibraryLookupRequested(
        **ENVELOPE,
        dois=["https://doi.org/10.1038/NATURE12373", "doi:10.1038/nature12373"],
        arxiv_ids=["arXiv:2203.00130v2", "https://arxiv.org/abs/hep-th/9901001v1"],
        pmids=["PMID: 20205926", "https://pubmed.ncbi.nlm.nih.gov/20205926/"],
        titles=["  Attention Is All You Need "],
    )
    assert request.dois == ["10.1038/nature12373"]
    assert request.arxiv_ids == ["2203.00130", "hep-th/9901001"]
    assert request.pmids == ["20205926"]
    assert request.titles == ["Attention Is All You Need"]
    assert LibraryLookupRequested.model_validate_json(request.model_dump_json()) == request
    assert (request.SUBJECT, LibraryItemsFound.SUBJECT) == (LIBRARY_LOOKUP_REQUESTED, LIBRARY_LOOKUP_COMPLETED)
    assert REPLY_OF[LibraryLookupRequested] is LibraryItemsFound


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("dois", "not a doi", "is not a DOI"),
        ("arxiv_ids", "1234", "is not an arXiv id"),
        ("pmids", "PMC12345", "is not a PubMed id"),
    ],
)
def test_a_bad_identifier_is_refused_saying_what_was_expected(field, value, says):
    with pytest.raises(ValidationError, match=says):
        LibraryLookupRequested(**ENVELOPE, **{field: [value]})


def test_a_lookup_names_something_and_stays_bounded():
    with pytest.raises(ValidationError, match="at least one DOI"):
        LibraryLookupRequested(**ENVELOPE)
    with pytest.raises(ValidationError):
        LibraryLookupRequested(**ENVELOPE, dois=[f"10.1000/{n}" for n in range(21)])
    with pytest.raises(ValidationError):
        LibraryLookupRequested(**ENVELOPE, titles=["x" * 501])


def test_a_match_names_its_item_within_its_library():
    match = LibraryItemMatch(item_key="ABCD2345", library_id="group-12", matched_by="doi", matched="10.1/x")
    assert LibraryItemsFound(**{k: v for k, v in ENVELOPE.items() if k != "reply_to"}, items=[match]).items == [match]
    with pytest.raises(ValidationError):
        LibraryItemMatch(item_key="ABCD2345", library_id="elsewhere", matched_by="doi", matched="10.1/x")


def test_a_retrieval_scope_names_items_and_a_version_1_request_still_decodes():
    # written the version-2 way (untagged items); read as version 3's items scope
    scoped = RetrievalRequested(
        **ENVELOPE, query="sample size", scope={"items": [{"library_id": "user", "item_key": "ABCD2345"}]}
    )
    assert scoped.schema_version == 4 and scoped.scope.kind == "items" and scoped.scope.items[0].item_key == "ABCD2345"
    assert RetrievalRequested.model_validate_json(scoped.model_dump_json()) == scoped
    v1 = RetrievalRequested.model_validate({**ENVELOPE, "query": "q", "schema_version": 1})
    assert v1.scope is None
    assert v1.back_matter == []  # before version 4, no topic of back matter was sent
    asked = RetrievalRequested(**ENVELOPE, query="who funded it?", back_matter=["funding"])
    assert RetrievalRequested.model_validate_json(asked.model_dump_json()).back_matter == ["funding"]
    with pytest.raises(ValidationError):
        RetrievalRequested(**ENVELOPE, query="q", back_matter=["horoscope"])
    with pytest.raises(ValidationError):
        RetrievalRequested(**ENVELOPE, query="q", scope={"items": []})
    with pytest.raises(ValidationError):
        RetrievalRequested(**ENVELOPE, query="q", scope={"items": [{"library_id": "user", "item_key": "../x"}]})
