"""Questions about a paper as a whole, or naming it by its authors (issue 14), end to end: the
real gateway and retrieval service over the answer benchmark's library (the fixture PDFs as
their items, with their authors, and the items of a real Zotero database) on a real
nats-server; the verifier is instant and discovery offline."""

from __future__ import annotations

import re

import pytest
import pytest_asyncio

from harness.answer_library import build_answer_library
from tests.gateway.test_library_first import FIXTURES, answered, cited_items, library_system

pytestmark = [pytest.mark.connected, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(module_nats_server, tmp_path_factory):
    if not (FIXTURES / "pdfs").exists():
        pytest.skip(f"PDF fixtures not found under {FIXTURES}")
    library = build_answer_library(tmp_path_factory.mktemp("lib") / "Zotero", FIXTURES)
    with pytest.MonkeyPatch.context() as mp:  # never discover a real ~/Zotero
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        async with library_system(module_nats_server.url, library.zotero_dir, tmp_path_factory.mktemp("data")) as (
            chat,
            _,
        ):
            yield chat, library.keys


async def test_a_paper_named_by_its_authors_is_found_though_no_passage_names_them(system):
    """No passage says "Douglas": the search for the question finds other papers' summaries.
    The paper is found by its author list, and the answer comes from its own abstract."""
    chat, keys = system
    record = await answered(chat, "Summarize the Douglas et al. paper")
    assert {key for _, key in cited_items(record)} == {keys["douglas2014"]}
    assert "927-fold more selective for the N-domain" in record["text"]


async def test_a_paper_the_library_holds_by_its_abstract_alone_is_found_by_its_creators(system):
    """An item with no file is one Zotero abstract, which never names its authors: the library
    lookup finds "Esmann et al." by the item's creators. With a year that is not the item's,
    it is not that paper."""
    chat, keys = system
    record = await answered(chat, "Summarize the Esmann et al. paper.")
    assert {key for _, key in cited_items(record)} == {keys["esmann2024"]}
    assert "three specific solid-state platforms" in record["text"]
    record = await answered(chat, "What did Moon et al. 2019 conclude?")
    assert keys["moon2023"] not in {key for _, key in cited_items(record)}


async def test_a_paper_named_by_authors_the_library_lacks_is_not_answered_from_another(system):
    chat, _ = system
    record = await answered(chat, "Summarize the Zhang et al. paper")
    assert record["citations"] == [] and "could not find" in record["text"]


async def test_a_question_naming_a_paper_is_searched_within_it_though_the_search_found_some_of_it(system):
    """The search for the question finds passages of the Kamuzu study, but not its Methods'
    summary (other papers' passages on observation and practice rank above it): the question is
    searched within the paper it names, and answered from there."""
    chat, keys = system
    record = await answered(chat, "What did Agyeman-Duah et al. use to record observed practice?")
    assert "checklists for observed practice" in record["text"]
    assert {key for _, key in cited_items(record)} == {keys["agyemanduah2014"]}


async def test_who_wrote_a_paper_and_where_it_appeared_are_answered_from_its_library_record(system):
    """A paper's text rarely says who wrote it or where it appeared: its library record does,
    and the answer cites that record."""
    chat, keys = system
    record = await answered(chat, "Who are the authors of the Paper Plain paper?")
    assert "by Tal August, Lucy Lu Wang, Jonathan Bragg, Marti A. Hearst, Andrew Head and Kyle Lo" in record["text"]
    assert {key for _, key in cited_items(record)} == {keys["august2022"]}
    assert [c["kind"] for c in record["citations"]] == ["record"]
    record = await answered(chat, "In which journal was the Kamuzu study published?")
    assert "in BMC Health Services Research" in record["text"]
    assert {key for _, key in cited_items(record)} == {keys["agyemanduah2014"]}
    record = await answered(chat, "When was the review on DVT prophylaxis in trauma published?")
    assert "published in 2010" in record["text"]


async def test_what_a_papers_own_system_is_is_answered_by_the_sentences_introducing_it(system):
    """ "What is Paper Plain?": every passage of the paper names it, none of those the search
    finds says what it is, and its abstract has no heading. The passages of the paper that
    introduce it are read, and the answer opens with one saying what it is."""
    chat, keys = system
    record = await answered(chat, "What is Paper Plain?")
    assert {key for _, key in cited_items(record)} == {keys["august2022"]}
    first = record["text"].split("\n- ", 1)[1]
    assert re.search(r"Paper Plain, an interactive|we introduce a novel interactive interface", first.split("\n")[0])
