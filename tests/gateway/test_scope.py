"""A question asked in a scope, end to end: the real gateway over HTTP, the real retrieval
service (model, index) over a Zotero library built from the real schema, on a real
nats-server; the verifier is instant. The scope travels from `POST /chat` to retrieval and
bounds what is cited; an empty scope is answered as such, with no sources; a malformed scope
is refused; `GET /library/collections` and `/library/tags` list what a scope may name, to
their owner only."""

from __future__ import annotations

import contextlib

import httpx
import pytest
import pytest_asyncio

from harness.serving import serving
from harness.system import FakeVerifier, UnreachableDiscovery, collect, parse_sse
from harness.zotero import ZoteroLibraryBuilder
from zocrates_runtime.settings import ZocratesSettings

pytestmark = [pytest.mark.connected, pytest.mark.asyncio(loop_scope="module")]

NOTES = {
    "graphene": ("Thermal conductivity of graphene", "<p>Suspended graphene conducts heat far better than copper.</p>"),
    "diamond": ("Heat transport in diamond", "<p>Diamond conducts heat well because its lattice is stiff.</p>"),
    "coffee": ("The coffee trade", "<p>Coffee exports shape the economies of Ethiopia and Colombia.</p>"),
}
QUESTION = "Which materials conduct heat well?"


def build_library(root, schema_dir):
    b = ZoteroLibraryBuilder(root / "zotero", schema_dir)
    ids = {}
    for name, (title, html) in NOTES.items():
        ids[name] = b.add_item("journalArticle", {"title": title, "date": "2020"})
        b.add_note(ids[name][0], html)
    physics = b.add_collection("Physics", [ids["graphene"][0]])
    b.add_collection("Empty", [])
    b.add_tag(ids["diamond"][0], "carbon")
    b.add_tag(ids["graphene"][0], "carbon")
    keys = {name: key for name, (_, key) in ids.items()}
    keys["physics"] = b.collection_key(physics)
    b.close()
    return b.dir, keys


@contextlib.asynccontextmanager
async def scoped_system(nats_url: str, zotero_dir, data_dir):
    from zocrates_discovery.app import create_app as discovery_app
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings
    from zocrates_retrieval.app import create_app as retrieval_app
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.service import RetrievalService
    from zocrates_verifier.app import create_app as verifier_app

    base = ZocratesSettings(nats_url=nats_url)
    retrieval = RetrievalService(RetrievalSettings(zotero_dir=zotero_dir, data_dir=data_dir, embedding_device="cpu"))
    apps = [
        retrieval_app(base, service=retrieval),
        discovery_app(base, service=UnreachableDiscovery()),
        verifier_app(base, service=FakeVerifier()),
    ]
    for service_app in apps:
        await service_app.start()
    await retrieval._ingest_task
    app = create_app(GatewaySettings(nats_url=nats_url))
    try:
        async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
            tokens = {user: await app.state.gateway.tokens.create(user) for user in ("local", "bob")}
            yield client, url, tokens
    finally:
        for service_app in apps:
            await service_app.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def system(module_nats_server, tmp_path_factory, schema_dir):
    zotero_dir, keys = build_library(tmp_path_factory.mktemp("lib"), schema_dir)
    with pytest.MonkeyPatch.context() as mp:  # never discover a real ~/Zotero
        mp.setenv("HOME", str(tmp_path_factory.mktemp("home")))
        async with scoped_system(module_nats_server.url, zotero_dir, tmp_path_factory.mktemp("data")) as running:
            yield (*running, keys)


@pytest.fixture(scope="module")
def schema_dir():
    from pathlib import Path

    schema = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "zotero" / "schema"
    if not schema.exists():
        pytest.skip(f"Zotero schema fixtures not found at {schema}")
    return schema


async def ask(system, scope: dict | None, user: str = "local") -> dict:
    client, url, tokens, _ = system
    events = await collect(client, url, QUESTION, None, tokens[user], scope=scope)
    assert events[-1]["event"] == "done", events[-1]
    return events[-1]["data"]


def searched(record: dict) -> set[str]:
    """The items the answer was written from: its cited and its other considered sources."""
    refs = record["references"]
    return {s["item_key"] for s in refs["cited"] + refs["considered"]}


async def test_a_question_in_a_scope_is_answered_from_its_items_only(system):
    keys = system[3]
    whole = await ask(system, None)
    assert searched(whole) == {keys["graphene"], keys["diamond"], keys["coffee"]}
    record = await ask(system, {"kind": "tag", "library_id": "user", "tag": "carbon"})
    assert record["citations"] and searched(record) == {keys["graphene"], keys["diamond"]}
    record = await ask(system, {"kind": "collection", "library_id": "user", "collection_key": keys["physics"]})
    assert searched(record) == {keys["graphene"]}


async def test_an_empty_scope_is_answered_as_such_without_sources(system):
    record = await ask(system, {"kind": "tag", "library_id": "user", "tag": "nobody-uses-this"})
    assert record["prose"].startswith("No items in this scope")
    assert (record["citations"], record["sources"]) == ([], "")
    assert (record["references"]["cited"], record["references"]["considered"]) == ([], [])


async def test_a_malformed_scope_is_refused_before_any_turn_starts(system):
    client, _, tokens, _ = system
    for scope in (
        {"kind": "everything"},
        {"kind": "tag", "library_id": "someone-else", "tag": "carbon"},
        {"kind": "items", "items": []},
    ):
        response = await client.post(
            "/chat", json={"message": QUESTION, "scope": scope}, headers={"Authorization": f"Bearer {tokens['local']}"}
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"]["code"]


async def test_collections_and_tags_are_listed_for_their_owner_only(system):
    client, _, tokens, keys = system
    mine = {"Authorization": f"Bearer {tokens['local']}"}
    collections = (await client.get("/library/collections", headers=mine)).json()
    assert collections["libraries"] == [{"library_id": "user", "name": "My Library"}]
    assert {(c["name"], c["key"], c["items"]) for c in collections["collections"]} >= {("Physics", keys["physics"], 1)}
    assert {c["name"] for c in collections["collections"]} == {"Physics", "Empty"}
    assert collections["truncated"] is False and "tags" not in collections
    tags = (await client.get("/library/tags", headers=mine)).json()
    assert tags["tags"] == [{"library_id": "user", "tag": "carbon", "items": 2}]
    bob = (await client.get("/library/tags", headers={"Authorization": f"Bearer {tokens['bob']}"})).json()
    assert (bob["libraries"], bob["tags"]) == ([], [])
    assert (await client.get("/library/collections")).status_code == 401


async def test_a_turn_keeps_its_scope_and_label_and_a_reload_returns_them(system):
    client, url, tokens, keys = system
    auth = {"Authorization": f"Bearer {tokens['local']}"}
    collection = {"kind": "collection", "library_id": "user", "collection_key": keys["physics"], "subcollections": True}
    body = {"message": QUESTION, "scope": collection, "scope_label": "Collection: Physics (with subcollections)"}
    async with client.stream("POST", f"{url}/chat", json=body, headers=auth) as response:
        events = parse_sse("".join([chunk async for chunk in response.aiter_text()]))
    done = events[-1]["data"]
    assert (done["scope"], done["scope_label"]) == (collection, "Collection: Physics (with subcollections)")
    tag = {"kind": "tag", "library_id": "user", "tag": "carbon"}
    await collect(client, url, "And which conduct it best?", done["session_id"], tokens["local"], scope=tag)
    await collect(client, url, "Which materials are stiff?", done["session_id"], tokens["local"])
    turns = (await client.get(f"/sessions/{done['session_id']}", headers=auth)).json()["turns"]
    assert [(t["scope"], t["scope_label"]) for t in turns] == [
        (collection, "Collection: Physics (with subcollections)"),
        (tag, "Tag: carbon"),  # sent without a label: named from the scope
        (None, ""),
    ]
    assert turns[0]["prose"] == done["prose"]


async def test_a_scope_label_longer_than_a_line_is_refused(system):
    client, _, tokens, _ = system
    body = {"message": QUESTION, "scope": {"kind": "library", "library_id": "user"}, "scope_label": "x" * 301}
    response = await client.post("/chat", json=body, headers={"Authorization": f"Bearer {tokens['local']}"})
    assert response.status_code == 422, response.text
