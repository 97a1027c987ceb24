"""The MCP tools through the SDK's own client: over streamable HTTP against the gateway's
`/mcp` (real nats-server, real gateway over HTTP, the services' real bus apps; discovery is the
real service, answering from a recorded OpenAlex response and filtering against a Zotero
library built from the real schema), and over stdio through `zocrates mcp`, started as a
process, relaying to that gateway."""

from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager

import httpx2
import pytest
import pytest_asyncio
import respx
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from harness.system import CHUNKS, running_system
from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import Creator, LibraryItemMatch, LibraryItemsFound, Pages
from zocrates_discovery.config import DiscoverySettings
from zocrates_discovery.service import DiscoveryService

pytestmark = [pytest.mark.connected, pytest.mark.asyncio(loop_scope="module")]

QUESTION = "What was the somatic mutation rate estimated from twins?"
OWNED_DOI = "10.1038/s42256-024-00832-8"
RECORDED_SEARCH = "api/paperqa/openalex/works_search__Augmenting_large_language_models_with_chemistry_tools__200_*.json"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(module_nats_server, tmp_path_factory, request):
    fixtures = request.config.rootpath.parent / "shared" / "fixtures"
    if not fixtures.exists():
        pytest.skip(f"shared fixtures not found at {fixtures}")
    zotero = ZoteroLibraryBuilder(tmp_path_factory.mktemp("zotero"), fixtures / "zotero" / "schema")
    zotero.add_item(
        "journalArticle",
        {"title": "Augmenting large language models with chemistry tools", "DOI": OWNED_DOI},
        key="OWNEDCHM",
    )
    zotero.close()
    settings = DiscoverySettings(
        _env_file=None,
        openalex_api_key="test-key",
        contact_email="researcher@example.org",
        zotero_dir=zotero.dir,
        local_user_id="alice",  # the token's user owns that library
        retry_wait_initial_s=0.0,
        retry_wait_max_s=0.0,
        cache_ttl_s=0,
    )
    async with running_system(module_nats_server.url, discovery=DiscoveryService(settings)) as running:
        running.recorded_search = json.loads(next(fixtures.glob(RECORDED_SEARCH)).read_text())
        yield running


@asynccontextmanager
async def mcp_client(system, token: str, mode: str = "auto"):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with (
        http,
        Client(streamable_http_client(f"{system.url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


async def call(system, tool: str, arguments: dict, token: str | None = None):
    async with mcp_client(system, token or system.token) as client:
        return await client.call_tool(tool, arguments)


async def test_the_four_tools_are_listed_with_their_input_schemas(system):
    async with mcp_client(system, system.token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"ask_library", "search_library", "find_papers", "get_item"}
    assert tools["ask_library"].input_schema["required"] == ["question"]
    assert "scope" in tools["search_library"].input_schema["properties"]


async def test_clients_of_the_handshake_era_reach_the_tools_too(system):
    async with mcp_client(system, system.token, mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("search_library", {"query": "attention", "limit": 1})
    assert names == {"ask_library", "search_library", "find_papers", "get_item"}
    assert result.structured_content["passages"][0]["item_key"] == "ITEMAAAA"


async def test_ask_library_answers_as_chat_does_with_verified_citations_and_both_tiers(system):
    result = await call(system, "ask_library", {"question": QUESTION})
    assert not result.is_error
    answer = result.structured_content
    assert answer["intent"] == "library" and "[1]" in answer["prose"]
    cited = answer["citations"][0]
    assert cited["item_key"] == "ITEMAAAA" and "387 pairs" in cited["quote"]
    assert all(o["probability"] == 0.9 and o["verdict"] == "KEPT" for o in cited["occurrences"])
    assert [r["item_key"] for r in answer["references"]["cited"]] == ["ITEMAAAA"]
    assert answer["references"]["considered"], "the sources it looked at but did not cite"
    assert not {"text", "sources", "coordinator_view"} & answer.keys()
    # The turn is the session's, as a chat turn is: the same record on reload.
    stored = await system.client.get(f"{system.url}/sessions/{answer['session_id']}", headers=system.auth)
    assert stored.json()["turns"][0]["citations"] == answer["citations"]


async def test_ask_library_with_a_scope_searches_only_there(system):
    scope = {"kind": "items", "items": [{"library_id": "user", "item_key": "ITEMBBBB"}]}
    result = await call(
        system,
        "ask_library",
        {"question": "How is an attention function described?", "scope": scope},
    )
    assert not result.is_error
    assert {c["item_key"] for c in result.structured_content["citations"]} == {"ITEMBBBB"}
    assert system.retrieval.requests[-1].scope.model_dump(mode="json") == scope
    assert system.retrieval.requests[-1].back_matter == []


async def test_what_a_question_asks_of_the_back_matter_is_sent_with_its_search(system):
    """The gateway reads a question about funding, ethics, ... and says so to retrieval, which
    knows the headings that answer it; by the turn and by the search tool alike."""
    await call(system, "ask_library", {"question": "Who funded the twin study?"})
    assert system.retrieval.requests[-1].back_matter == ["funding"]
    await call(system, "search_library", {"query": "competing interests of the authors", "limit": 3})
    assert system.retrieval.requests[-1].back_matter == ["competing_interests"]


async def test_search_library_returns_passages_with_item_metadata(system, monkeypatch):
    pages = Pages(index=3, label="1236")
    monkeypatch.setattr(system.retrieval, "chunks", [CHUNKS[0].model_copy(update={"pages": pages}), *CHUNKS[1:]])
    result = await call(system, "search_library", {"query": "attention", "limit": 2})
    passages = result.structured_content["passages"]
    assert [p["item_key"] for p in passages] == ["ITEMAAAA", "ITEMBBBB"]
    assert passages[0]["authors"] == "Jonsson & Stefansson" and passages[0]["year"] == 2021
    assert passages[0]["publication"] == "Nature Genetics" and "monozygotic" in passages[0]["text"]
    assert passages[0]["pages"] == pages.model_dump() and passages[1]["pages"] is None
    assert system.retrieval.requests[-1].top_k == 2


async def test_find_papers_leaves_out_what_the_library_owns(system):
    # The MCP client speaks httpx2, which respx leaves alone; discovery's httpx calls are replayed.
    with respx.mock() as mock:  # any request without a route fails
        search = mock.get("https://api.openalex.org/works").respond(200, json=system.recorded_search)
        result = await call(system, "find_papers", {"query": "LLM agents for chemistry", "limit": 5})
    assert search.call_count == 1 and not result.is_error
    found = result.structured_content
    [candidate] = found["candidates"]
    assert candidate["title"].startswith("ChemCrow") and candidate["arxiv_id"] == "2304.05376"
    [owned] = found["owned"]
    assert owned["doi"] == OWNED_DOI and owned["item_key"] == "OWNEDCHM" and "same DOI" in owned["reason"]


async def test_get_item_looks_the_identifier_up_in_the_callers_library(system):
    asked = []

    async def lookup(request):
        asked.append(request)
        match = LibraryItemMatch(
            item_key="ITEMAAAA",
            library_id="user",
            title="Somatic mutation rates in monozygotic twins",
            creators=[Creator(last_name="Jonsson")],
            year=2021,
            doi="10.1038/s41588-021-00000-1",
            matched_by="doi",
            matched="10.1038/s41588-021-00000-1",
        )
        return LibraryItemsFound(**request.reply_fields(), items=[match], searched_items=3)

    system.retrieval.lookup = lookup
    try:
        result = await call(system, "get_item", {"identifier": "https://doi.org/10.1038/S41588-021-00000-1"})
    finally:
        del system.retrieval.lookup
    assert result.structured_content["items"][0]["item_key"] == "ITEMAAAA"
    assert asked[0].dois == ["10.1038/s41588-021-00000-1"] and asked[0].user_id == "alice"


async def test_get_item_with_a_title_finds_nothing_in_a_library_without_it(system):
    result = await call(system, "get_item", {"identifier": "An Unknown Paper"})
    assert result.structured_content == {"items": [], "searched_items": 3}


async def test_without_a_token_the_endpoint_is_a_json_401(system):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        response = await system.client.post(f"{system.url}/mcp", json=body, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_each_user_reaches_only_their_own_sessions_and_library(system):
    bob = await system.new_token("bob")
    alices = (await call(system, "ask_library", {"question": QUESTION})).structured_content["session_id"]
    result = await call(system, "ask_library", {"question": "and in children?", "session_id": alices}, token=bob)
    assert result.is_error and "session_not_found: " in result.content[0].text
    await call(system, "search_library", {"query": "attention"}, token=bob)
    assert system.retrieval.requests[-1].user_id == "bob"


async def test_bad_arguments_are_tool_errors_that_say_why(system):
    empty = await call(system, "ask_library", {"question": "   "})
    assert empty.is_error and "empty_message: " in empty.content[0].text
    huge = await call(system, "ask_library", {"question": "x" * 40_000})
    assert huge.is_error and "message_too_large: " in huge.content[0].text
    bad_scope = await call(system, "search_library", {"query": "a", "scope": {"kind": "shelf"}})
    assert bad_scope.is_error
    bad_session = await call(system, "ask_library", {"question": "why?", "session_id": "../other"})
    assert bad_session.is_error and "session_id" in bad_session.content[0].text


async def test_zocrates_mcp_relays_the_tools_over_stdio(system):
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join(sys.path),
        "ZOCRATES_URL": system.url,
        "ZOCRATES_TOKEN": system.token,
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "zocrates_runtime.cli", "mcp"], env=env)
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("search_library", {"query": "attention", "limit": 1})
    assert names == {"ask_library", "search_library", "find_papers", "get_item"}
    assert result.structured_content["passages"][0]["item_key"] == "ITEMAAAA"
