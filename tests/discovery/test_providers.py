"""Each provider's parsing, on real recorded answers replayed with respx."""

from __future__ import annotations

import httpx
import pytest
import respx

from zocrates_discovery.adapters.http import Http
from zocrates_discovery.adapters.providers.abstracts import AbstractBackfill
from zocrates_discovery.adapters.providers.crossref import Crossref, jats_to_text, license_name, parse_item
from zocrates_discovery.adapters.providers.openalex import (
    OpenAlex,
    keywords_of,
    parse_work,
    rebuild_abstract,
    search_text,
)
from zocrates_discovery.adapters.providers.pubmed import PubMed, parse_abstracts
from zocrates_discovery.adapters.providers.semanticscholar import SemanticScholar, paper_key, parse_paper
from zocrates_discovery.adapters.providers.unpaywall import Unpaywall, parse_record
from zocrates_discovery.domain.works import Work


@pytest.fixture
async def http():
    async with httpx.AsyncClient() as client:
        yield Http(client, attempts=2, wait_initial=0, wait_max=0, cache_ttl=0)


# --- OpenAlex ---------------------------------------------------------------------------------


def test_abstract_is_rebuilt_from_the_inverted_index():
    assert rebuild_abstract({"is": [1], "This": [0], "short.": [3], "very": [2]}) == "This is very short."
    assert rebuild_abstract({"a": [0, 2], "b": [1]}) == "a b a"
    assert rebuild_abstract({"Abstract": [0], "Cells": [1], "divide.": [2]}) == "Cells divide."
    assert rebuild_abstract({"Abstracts": [0], "differ.": [1]}) == "Abstracts differ."
    assert rebuild_abstract(None) is None and rebuild_abstract({}) is None


def test_recorded_abstract_reads_as_text(recorded):
    work = recorded("openalex/works_search__Augmenting_large_language_models_with*")["results"][0]
    abstract = rebuild_abstract(work["abstract_inverted_index"])
    assert abstract.startswith("Large language models (LLMs) have shown strong performance")
    # Every position is placed once; only the publisher's leading "Abstract" heading is dropped.
    assert len(abstract.split()) == sum(len(p) for p in work["abstract_inverted_index"].values()) - 1


def test_keywords_are_concepts_scored_at_least_060_then_the_primary_topic(recorded):
    work = recorded("openalex/works_search__Augmenting_large_language_models_with*")["results"][0]
    expected = [c["display_name"] for c in work["concepts"] if c["score"] >= 0.60]
    assert keywords_of(work) == [*expected, "Machine Learning in Materials Science"]
    assert "Set (abstract data type)" not in keywords_of(work)  # scored 0.45
    assert keywords_of({"concepts": [{"display_name": "X", "score": 0.6}], "primary_topic": {"display_name": "X"}}) == [
        "X"
    ]


def test_openalex_search_result_parses_into_works(recorded):
    results = recorded("openalex/works_search__Augmenting_large_language_models_with*")["results"]
    journal, preprint = (parse_work(w) for w in results)
    assert journal.openalex_id == "W4396723768"
    assert journal.doi == "10.1038/s42256-024-00832-8"
    assert journal.venue == "Nature Machine Intelligence"
    assert journal.year == 2024 and journal.authors[0] == "Andres M. Bran"
    assert journal.pmid == "38799228"
    assert journal.pdf_url == "https://www.nature.com/articles/s42256-024-00832-8.pdf"
    assert journal.oa_status == "hybrid" and journal.license == "cc-by"
    assert journal.cited_by_count == 236
    assert preprint.doi == "10.48550/arxiv.2304.05376" and preprint.arxiv_id == "2304.05376"


def test_openalex_singleton_without_abstract_parses(recorded):
    work = parse_work(recorded("openalex/work__10.1016_j.xgen.2025.100814__200_*"))
    assert work.title.startswith("High-throughput screening of human genetic variants")
    assert work.abstract is None and work.pmid == "40120586"


def test_search_text_is_capped_at_a_word_boundary():
    long = "word " * 400
    capped = search_text(long)
    assert len(capped) <= 1_500 and not capped.endswith(" ") and capped.endswith("word")


async def test_openalex_search_sends_the_key_as_bearer_and_no_mailto(http, settings, recorded):
    body = recorded("openalex/works_search__Augmenting_large_language_models_with*")
    with respx.mock(assert_all_called=True) as mock:
        route = mock.get("https://api.openalex.org/works").respond(200, json=body)
        works = await OpenAlex(http, settings).search("augmenting large language models with chemistry tools")
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer test-key"
    assert "mailto" not in str(request.url) and "api_key" not in str(request.url)
    assert request.url.params["search"] == "augmenting large language models with chemistry tools"
    assert [w.openalex_id for w in works] == ["W4396723768", "W4365597205"]


async def test_openalex_search_filters_by_publication_date_when_asked(http, settings, recorded):
    body = recorded("openalex/works_search__Augmenting_large_language_models_with*")
    with respx.mock(assert_all_called=True) as mock:
        route = mock.get("https://api.openalex.org/works").respond(200, json=body)
        await OpenAlex(http, settings).search("chemistry tools", from_year=2022)
        assert route.calls.last.request.url.params["filter"] == "is_paratext:false,from_publication_date:2022-01-01"
        await OpenAlex(http, settings).search("chemistry tools")
        assert route.calls.last.request.url.params["filter"] == "is_paratext:false"


async def test_keyless_openalex_sends_no_authorization_and_is_demo(http, settings, recorded):
    keyless = settings.model_copy(update={"openalex_api_key": None})
    client = OpenAlex(http, keyless)
    assert client.demo
    with respx.mock() as mock:
        route = mock.get(url__regex=r"https://api\.openalex\.org/works/doi:.*").respond(
            200, json=recorded("openalex/work__10.1073_pnas.1414271111__200_*")
        )
        work = await client.by_doi("10.1073/pnas.1414271111")
    assert "authorization" not in route.calls.last.request.headers
    assert work.openalex_id == "W2109415576" and work.abstract


async def test_unknown_doi_is_none(http, settings, recorded):
    with respx.mock() as mock:
        mock.get(url__regex=r"https://api\.openalex\.org/works/doi:.*").respond(
            404, text=recorded("openalex/work__10.1046_j.1365-2699.2003.00795__select__404_*")
        )
        assert await OpenAlex(http, settings).by_doi("10.1046/j.1365-2699.2003.00795.x") is None


def test_empty_key_is_no_key(monkeypatch):
    from zocrates_discovery.config import DiscoverySettings

    monkeypatch.setenv("ZOCRATES_DISCOVERY_OPENALEX_API_KEY", "  ")
    assert DiscoverySettings(_env_file=None, zotero_dir=None).openalex_api_key is None


# --- Crossref ---------------------------------------------------------------------------------


def test_crossref_work_parses_year_venue_abstract_and_licence(recorded):
    work = parse_item(recorded("crossref/work__10.1038_s42256-024-00832-8__200_*")["message"])
    assert work.doi == "10.1038/s42256-024-00832-8"
    assert work.year == 2024 and work.venue == "Nature Machine Intelligence"
    assert work.authors[0] == "Andres M. Bran"
    assert work.abstract.startswith("Large language models (LLMs)") and "<jats" not in work.abstract
    assert work.license == "cc-by"


def test_jats_and_licences():
    assert jats_to_text("<jats:title>Abstract</jats:title><jats:p>A &amp; B</jats:p>") == "A & B"
    assert license_name("https://creativecommons.org/licenses/by-nc-nd/4.0/") == "cc-by-nc-nd"
    assert license_name("http://creativecommons.org/publicdomain/zero/1.0/") == "cc0"
    assert (
        license_name("https://www.elsevier.com/tdm/userlicense/1.0/") == "https://www.elsevier.com/tdm/userlicense/1.0/"
    )


async def test_crossref_search_and_missing_doi(http, settings, recorded):
    with respx.mock() as mock:
        search = mock.get("https://api.crossref.org/works").respond(
            200, json=recorded("crossref/works_query__Attention_is_All_you_Need__200_*")
        )
        mock.get(url__regex=r"https://api\.crossref\.org/works/10\.48550.*").respond(
            404, text=recorded("crossref/bibtex__10.48550_arXiv.2304.05376_*")
        )
        client = Crossref(http, settings)
        works = await client.search("attention is all you need")
        assert await client.work("10.48550/arxiv.2304.05376") is None
    assert works[0].doi == "10.18653/v1/n18-2074"
    assert search.calls.last.request.url.params["mailto"] == "researcher@example.org"


# --- Unpaywall --------------------------------------------------------------------------------


def test_unpaywall_record_gives_licence_and_status(recorded):
    oa = parse_record(recorded("unpaywall/doi__10.1016_j.addr.2015.01.008__200_*"))
    assert oa.oa_status == "hybrid" and oa.license == "cc-by-nc-nd" and oa.version == "publishedVersion"
    assert oa.pdf_url is None  # the recorded best location has no PDF link


async def test_unpaywall_sends_the_required_email_and_is_off_without_one(http, settings, recorded):
    with respx.mock() as mock:
        route = mock.get(url__regex=r"https://api\.unpaywall\.org/v2/10\.1073.*").respond(
            200, json=recorded("unpaywall/doi__10.1073_pnas.1414271111__200_*")
        )
        oa = await Unpaywall(http, settings).lookup("10.1073/pnas.1414271111")
    assert route.calls.last.request.url.params["email"] == "researcher@example.org"
    assert oa is not None and oa.oa_status
    anonymous = Unpaywall(http, settings.model_copy(update={"contact_email": None}))
    assert not anonymous.enabled and await anonymous.lookup("10.1073/pnas.1414271111") is None


# --- Semantic Scholar and PubMed --------------------------------------------------------------


def test_semantic_scholar_paper_parses(recorded):
    paper = parse_paper(recorded("semanticscholar/paper__DOI_10.1016_j.xgen.2025.100814__200_8bb285.json"))
    assert paper.doi == "10.1016/j.xgen.2025.100814" and paper.pmid == "40120586"
    assert paper.venue == "Cell Genomics" and paper.oa_status == "gold" and paper.license == "cc-by"
    arxiv = parse_paper(recorded("semanticscholar/paper__DOI_10.48550_arxiv.2312.07559__200_499145.json"))
    assert arxiv.arxiv_id == "2312.07559" and arxiv.pdf_url is None


def test_semantic_scholar_addresses_preprints_by_arxiv_id():
    assert paper_key("10.48550/arxiv.2312.07559", None) == "ARXIV:2312.07559"
    assert paper_key("10.1063/1.4938384", None) == "DOI:10.1063/1.4938384"
    assert paper_key(None, None) is None


def test_pubmed_abstract_keeps_labelled_sections(fixtures_dir):
    xml = (fixtures_dir / "api/pubmed/biopython/pubmed4.xml").read_text()
    abstracts = parse_abstracts(xml)
    assert list(abstracts) == ["27797938"]
    text = abstracts["27797938"]
    assert text.startswith("Objective: Telomere shortening occurs")
    assert "Conclusions: Prediagnostic leucocyte telomere length" in text
    assert "(<i>TERT</i>)" not in text and "(TERT)" in text


async def test_backfill_asks_semantic_scholar_then_pubmed_in_one_request_each(http, settings, recorded, fixtures_dir):
    s2 = SemanticScholar(http, settings)
    pubmed = PubMed(http, settings)
    no_abstract = recorded("semanticscholar/paper__DOI_10.1016_j.xgen.2025.100814__200_8bb285.json")
    with_abstract = {
        **recorded("semanticscholar/paper__DOI_10.1063_1.4938384__200_4a0a00.json"),
        "abstract": "Copper films grow a native oxide.",
    }
    works = [
        Work(title="xgen", source="openalex", doi="10.1016/j.xgen.2025.100814"),
        Work(title="copper", source="openalex", doi="10.1063/1.4938384"),
        Work(title="telomeres", source="openalex", pmid="27797938"),
        Work(title="has one", source="openalex", doi="10.1/x", abstract="kept"),
    ]
    with respx.mock(assert_all_called=True) as mock:
        # The batch endpoint answers a list aligned with the ids (recorded single-paper bodies).
        batch = mock.post("https://api.semanticscholar.org/graph/v1/paper/batch").respond(
            200, json=[no_abstract, with_abstract]
        )
        efetch = mock.get("https://eutils.ncbi.nlm.nih.gov/entrez/eutils/efetch.fcgi").respond(
            200, text=(fixtures_dir / "api/pubmed/biopython/pubmed4.xml").read_text()
        )
        counts = await AbstractBackfill(s2, pubmed).fill(works)
    assert batch.calls.last.request.read() == b'{"ids":["DOI:10.1016/j.xgen.2025.100814","DOI:10.1063/1.4938384"]}'
    # xgen gained its PMID from Semantic Scholar, so PubMed was asked for both PMIDs at once.
    assert efetch.calls.last.request.url.params["id"] == "40120586,27797938"
    assert counts == {"semanticscholar": 1, "pubmed": 1}
    assert works[1].abstract == "Copper films grow a native oxide."
    assert works[2].abstract.startswith("Objective:")
    assert works[0].abstract is None  # no source had it: left empty, not made up
    assert works[3].abstract == "kept"


async def test_backfill_skips_a_slow_source(http, settings):
    import asyncio

    async def slow(request):
        await asyncio.sleep(1)
        return httpx.Response(200, json=[])

    works = [Work(title="t", source="openalex", doi="10.1000/slow", pmid="27797938")]
    with respx.mock(assert_all_called=False) as mock:
        mock.post("https://api.semanticscholar.org/graph/v1/paper/batch").mock(
            side_effect=slow
        )  # cancelled: not "called"
        mock.get("https://eutils.ncbi.nlm.nih.gov/entrez/eutils/efetch.fcgi").respond(500)
        counts = await AbstractBackfill(SemanticScholar(http, settings), PubMed(http, settings), timeout_s=0.1).fill(
            works
        )
    assert counts == {"semanticscholar": 0, "pubmed": 0} and works[0].abstract is None
