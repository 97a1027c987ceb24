"""The discovery service end to end, with every API replayed from real recorded answers."""

from __future__ import annotations

import os
import re

import httpx
import pytest
import respx
from discovery.responses import BUDGET_429

from zocrates_contracts import Candidate, DiscoveryRequested, RecheckRequested
from zocrates_discovery.service import DEMO_NOTE, DiscoveryService

IDS = {"turn_id": "t1", "session_id": "s1", "user_id": "local", "reply_to": "zocrates.reply.gw.discovery"}
OPENALEX = "https://api.openalex.org"
S2_BATCH = "https://api.semanticscholar.org/graph/v1/paper/batch"


@pytest.fixture
async def service(settings, zotero):
    zotero.add_item(
        "journalArticle",
        {"title": "Augmenting large language models with chemistry tools", "DOI": "10.1038/s42256-024-00832-8"},
        key="OWNEDCHM",
    )
    svc = DiscoveryService(settings.model_copy(update={"zotero_dir": zotero.dir}))
    await svc.start()
    yield svc
    await svc.close()


async def test_search_drops_the_owned_journal_paper_and_keeps_its_preprint(service, recorded):
    with respx.mock() as mock:  # any request without a route fails the test
        search = mock.get(f"{OPENALEX}/works").respond(
            200, json=recorded("openalex/works_search__Augmenting_large_language_models_with*")
        )
        reply = await service.discover(DiscoveryRequested(**IDS, queries=["LLM agents for chemistry"], limit=5))
    assert search.call_count == 1
    assert reply.error is None and reply.turn_id == "t1" and reply.message_id.endswith("-r")
    [candidate] = reply.candidates
    assert candidate.candidate_id == "W4365597205" and candidate.arxiv_id == "2304.05376"
    assert candidate.title.startswith("ChemCrow") and candidate.abstract and candidate.keywords
    [dropped] = reply.dropped
    assert dropped.candidate.doi == "10.1038/s42256-024-00832-8"
    assert dropped.matched_item_key == "OWNEDCHM" and "same DOI" in dropped.reason
    assert service.health()["library_items"] == 1


async def test_spent_budget_falls_back_to_crossref_and_says_until_when(service, recorded):
    with respx.mock() as mock:
        openalex = mock.get(f"{OPENALEX}/works").mock(return_value=BUDGET_429)
        crossref = mock.get("https://api.crossref.org/works").respond(
            200, json=recorded("crossref/works_query__Attention_is_All_you_Need__200_*")
        )
        mock.get(url__regex=r"https://api\.unpaywall\.org/.*").respond(404, json={"error": True})
        mock.post(S2_BATCH).respond(200, json=[None])
        first = await service.find(["attention is all you need"], 5, "local")
        second = await service.find(["relative position representations"], 5, "local")
    assert openalex.call_count == 1  # the spent budget is remembered, not asked about again
    assert crossref.call_count == 2
    assert first.error is None and first.candidates[0].doi == "10.18653/v1/n18-2074"
    until = f"{service.openalex.exhausted_until:%H:%M} UTC"  # now + X-RateLimit-Reset
    assert first.notes == [f"OpenAlex budget exhausted until {until}; these results come from Crossref instead."]
    assert second.candidates and service.health()["openalex_budget"] == f"exhausted until {until}"


async def test_spent_budget_and_failing_fallbacks_are_one_clear_error(service):
    with respx.mock() as mock:
        mock.get(f"{OPENALEX}/works").mock(return_value=BUDGET_429)
        mock.get("https://api.crossref.org/works").respond(500)
        mock.get("https://api.semanticscholar.org/graph/v1/paper/search").respond(500)
        reply = await service.discover(DiscoveryRequested(**IDS, queries=["anything"]))
    assert reply.candidates == [] and reply.error.code == "overloaded"
    assert re.match(r"OpenAlex budget exhausted until \d\d:\d\d UTC; ", reply.error.message)
    assert "fallback searches failed too" in reply.error.message


async def test_offline_machine_gets_an_unreachable_error_not_made_up_data(service):
    with respx.mock() as mock:
        mock.route().mock(side_effect=httpx.ConnectError("[Errno -3] Temporary failure in name resolution"))
        reply = await service.discover(DiscoveryRequested(**IDS, queries=["graph neural networks"]))
    assert reply.candidates == [] and reply.dropped == []
    assert reply.error.code == "unreachable" and reply.error.service == "discovery"
    assert reply.error.message == (
        "OpenAlex is unreachable from this machine: [Errno -3] Temporary failure in "
        "name resolution. Online discovery needs internet access."
    )


async def test_pasted_doi_is_looked_up_directly_and_enriched(service, recorded, fixtures_dir):
    with respx.mock(assert_all_called=False) as mock:
        search = mock.get(f"{OPENALEX}/works")
        lookup = mock.get(url__regex=rf"{OPENALEX}/works/doi:10\.1016/j\.xgen\.2025\.100814").respond(
            200, json=recorded("openalex/work__10.1016_j.xgen.2025.100814__200_*")
        )
        unpaywall = mock.get(url__regex=r"https://api\.unpaywall\.org/v2/10\.1016/j\.xgen.*").respond(
            200, json=recorded("unpaywall/doi__10.1016_j.xgen.2025.100814__200_*")
        )
        mock.get(url__regex=r"https://api\.crossref\.org/works/10\.1016/j\.xgen.*").respond(
            200, json=recorded("crossref/work__10.1016_j.xgen.2025.100814__200_*")
        )
        s2 = mock.post(S2_BATCH).respond(
            200, json=[recorded("semanticscholar/paper__DOI_10.1016_j.xgen.2025.100814__200_8bb285.json")]
        )
        efetch = mock.get("https://eutils.ncbi.nlm.nih.gov/entrez/eutils/efetch.fcgi").respond(
            200, text=(fixtures_dir / "api/pubmed/biopython/pubmed4.xml").read_text()
        )
        result = await service.find(["please look at https://doi.org/10.1016/j.xgen.2025.100814"], 5, "local")
    assert not search.called and lookup.call_count == 1
    [candidate] = result.candidates
    assert candidate.doi == "10.1016/j.xgen.2025.100814" and candidate.venue == "Cell Genomics"
    assert unpaywall.called and s2.called and efetch.called
    assert efetch.calls.last.request.url.params["id"] == "40120586"
    # The recorded PubMed answer is another paper's, and nobody else has this abstract: none is invented.
    assert candidate.abstract is None and candidate.keywords


async def test_unknown_pasted_doi_is_a_note_not_a_candidate(service):
    with respx.mock() as mock:
        mock.get(url__regex=rf"{OPENALEX}/works/doi:.*").respond(404)
        mock.get(url__regex=r"https://api\.crossref\.org/works/.*").respond(404, text="Resource not found.")
        result = await service.find(["10.1234/does-not-exist"], 5, "local")
    assert result.candidates == [] and result.error is None
    assert any("10.1234/does-not-exist" in n for n in result.notes)


async def test_recheck_sees_items_imported_since_the_search(service, zotero):
    candidate = Candidate(candidate_id="W1", title="A brand new paper", doi="10.5555/new.1")
    assert await service.recheck("local", [candidate]) == []
    zotero.add_item("journalArticle", {"title": "A brand new paper", "DOI": "10.5555/NEW.1"}, key="IMPORTED")
    os.utime(zotero.path, ns=(zotero.path.stat().st_atime_ns, zotero.path.stat().st_mtime_ns + 1_000_000))
    [dropped] = await service.recheck("local", [candidate])
    assert dropped.matched_item_key == "IMPORTED"
    other = Candidate(candidate_id="W2", title="Still new to the user")
    reply = await service.answer_recheck(RecheckRequested(**IDS, candidates=[candidate, other]))
    assert [c.candidate_id for c in reply.candidates] == ["W2"]
    assert [d.candidate.candidate_id for d in reply.dropped] == ["W1"] and reply.turn_id == "t1"


async def test_another_users_request_is_not_filtered_by_the_local_library(service, recorded):
    with respx.mock() as mock:
        mock.get(f"{OPENALEX}/works").respond(
            200, json=recorded("openalex/works_search__Augmenting_large_language_models_with*")
        )
        result = await service.find(["chemistry agents"], 5, "someone-else")
    assert len(result.candidates) == 2 and result.dropped == []
    assert any("library is not known" in n for n in result.notes)
    assert await service.recheck("someone-else", result.candidates) == []


async def test_keyless_openalex_is_demo_mode_in_health_and_notes(settings, recorded):
    svc = DiscoveryService(settings.model_copy(update={"openalex_api_key": None}))
    await svc.start()
    try:
        health = svc.health()
        assert health["openalex_key"] is False and health["openalex_mode"] == "demo"
        assert health["library_items"] == 0 and health["status"] == "ok"
        with respx.mock() as mock:
            route = mock.get(f"{OPENALEX}/works").respond(
                200, json=recorded("openalex/works_search__Effect_of_native_oxide*")
            )
            mock.get(url__regex=r"https://api\.unpaywall\.org/.*").respond(404, json={})
            result = await svc.find(["copper oxide thin films"], 3, "local")
        assert "authorization" not in route.calls.last.request.headers
        assert DEMO_NOTE in result.notes and result.candidates
    finally:
        await svc.close()


async def test_empty_queries_are_invalid(service):
    result = await service.find(["   "], 5, "local")
    assert result.error.code == "invalid"


async def test_the_requesters_contact_email_goes_to_the_polite_pools_and_only_for_their_request(
    settings, zotero, recorded, fixtures_dir
):
    svc = DiscoveryService(settings.model_copy(update={"zotero_dir": zotero.dir, "contact_email": None}))
    await svc.start()
    try:
        with respx.mock(assert_all_called=False) as mock:
            mock.get(url__regex=rf"{OPENALEX}/works/doi:10\.1016/j\.xgen\.2025\.100814").respond(
                200, json=recorded("openalex/work__10.1016_j.xgen.2025.100814__200_*")
            )
            unpaywall = mock.get(url__regex=r"https://api\.unpaywall\.org/v2/10\.1016/j\.xgen.*").respond(
                200, json=recorded("unpaywall/doi__10.1016_j.xgen.2025.100814__200_*")
            )
            crossref = mock.get(url__regex=r"https://api\.crossref\.org/works/10\.1016/j\.xgen.*").respond(
                200, json=recorded("crossref/work__10.1016_j.xgen.2025.100814__200_*")
            )
            mock.post(S2_BATCH).respond(200, json=[None])
            efetch = mock.get("https://eutils.ncbi.nlm.nih.gov/entrez/eutils/efetch.fcgi").respond(
                200, text=(fixtures_dir / "api/pubmed/biopython/pubmed4.xml").read_text()
            )
            query = ["10.1016/j.xgen.2025.100814"]
            await svc.discover(DiscoveryRequested(**IDS, queries=query, contact_email="ada@lab.org"))
            assert unpaywall.call_count == 1
            assert unpaywall.calls.last.request.url.params["email"] == "ada@lab.org"
            assert crossref.called and efetch.called
            for route in (crossref, efetch):
                assert all(
                    c.request.url.params.get("mailto", c.request.url.params.get("email")) == "ada@lab.org"
                    for c in route.calls
                )
            # Another user's request without a contact (and none configured): Unpaywall is not asked.
            await svc.discover(DiscoveryRequested(**IDS | {"user_id": "other"}, queries=query))
            assert unpaywall.call_count == 1
            assert all("ada@lab.org" not in str(c.request.url) for c in crossref.calls[1:] + efetch.calls[1:])
    finally:
        await svc.close()
