"""A question's scope (`RetrievalScope`): a library, a collection with or without its
subcollections, a tag, a set of items, one attachment. Searched in a real Zotero library
through the real service (model, index); placement (collections, tags) updated in place on a
rescan without re-embedding; an index of version 5 indexed again for its pages; the
outline the scope chip offers; and the pure mapping from scope to index narrowings."""

from __future__ import annotations

import hashlib
import json

import pytest
import pytest_asyncio
from pydantic import TypeAdapter

from harness.retrieval import ingested_service
from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import LibraryOutlineRequested, RetrievalRequested
from zocrates_contracts.scopes import RetrievalScope
from zocrates_retrieval.adapters.store import (
    COLLECTIONS_FIELD,
    TAGS_FIELD,
    Tenant,
    indexed_sources,
    tenant_filter,
)
from zocrates_retrieval.adapters.zotero import read_library

pytestmark = pytest.mark.asyncio(loop_scope="module")

ENVELOPE = {"turn_id": "t1", "session_id": "s1", "reply_to": "zocrates.reply.gw.retrieval"}
SCOPE = TypeAdapter(RetrievalScope)
QUESTION = "what is known about heat, proteins, trade and neurons"


def build(root, schema_dir, make):
    """Four papers: graphene (PDF) in Physics, tagged materials; yeast (note) in Biology >
    Yeast, tagged to-read; coffee (PDF) in no collection, tagged to-read; neurons (note) in a
    group library's collection Neuro. Biology holds no item of its own; Empty holds none."""
    b = ZoteroLibraryBuilder(root / "zotero", schema_dir)
    ids = {}
    ids["graphene"] = b.add_item("journalArticle", {"title": "Thermal conductivity of graphene", "date": "2008"})
    ids["graphene_pdf"] = b.add_attachment(
        ids["graphene"][0],
        "graphene.pdf",
        make.text_pdf([("Results", ["Suspended graphene conducts heat at up to 5000 W/mK, far above copper."])]),
    )
    ids["yeast"] = b.add_item("journalArticle", {"title": "Protein folding in yeast", "date": "2015"})
    b.add_note(ids["yeast"][0], "<p>Chaperones help yeast proteins fold under heat shock.</p>")
    ids["coffee"] = b.add_item("journalArticle", {"title": "The coffee trade", "date": "2019"})
    ids["coffee_pdf"] = b.add_attachment(
        ids["coffee"][0],
        "coffee.pdf",
        make.text_pdf([("Trade", ["Coffee exports shape the economies of Ethiopia and Colombia."])]),
    )
    group = b.add_group(99, "Neuro lab")
    ids["neuron"] = b.add_item("journalArticle", {"title": "Spiking neurons", "date": "2020"}, library_id=group)
    b.add_note(ids["neuron"][0], "<p>Cortical neurons fire spikes in bursts.</p>", library_id=group)
    cols = {
        "physics": b.add_collection("Physics", [ids["graphene"][0]]),
        "biology": b.add_collection("Biology", []),
        "empty": b.add_collection("Empty", []),
        "neuro": b.add_collection("Neuro", [ids["neuron"][0]], library_id=group),
    }
    cols["yeast"] = b.add_collection("Yeast", [ids["yeast"][0]], parent_id=cols["biology"])
    b.add_tag(ids["graphene"][0], "materials")
    b.add_tag(ids["yeast"][0], "to-read")
    b.add_tag(ids["coffee"][0], "to-read", tag_type=1)
    return b, ids, cols


@pytest.fixture(scope="module")
def library(tmp_path_factory, schema_dir, make):
    builder, ids, cols = build(tmp_path_factory.mktemp("lib"), schema_dir, make)
    yield builder, ids, cols
    builder.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service(tmp_path_factory, library):
    async with ingested_service(tmp_path_factory, library[0].dir, rescan_interval_s=0) as svc:
        yield svc


def key(library, name: str) -> str:
    return library[1][name][1]


def collection(library, name: str) -> str:
    return library[0].collection_key(library[2][name])


async def ask(service, scope: dict | None, user: str = "local", **extra):
    return await service.search(
        RetrievalRequested(user_id=user, query=QUESTION, top_k=20, scope=scope, **ENVELOPE, **extra)
    )


async def items_in(service, scope: dict | None, **extra) -> set[str]:
    found = await ask(service, scope, **extra)
    assert found.error is None and not found.scope_empty
    return {c.item_key for c in found.chunks}


async def test_the_whole_library_is_every_library_of_the_user(service, library):
    assert await items_in(service, None) == {key(library, n) for n in ("graphene", "yeast", "coffee", "neuron")}


async def test_a_library_scope_is_that_library_only(service, library):
    assert await items_in(service, {"kind": "library", "library_id": "group-99"}) == {key(library, "neuron")}
    mine = await items_in(service, {"kind": "library", "library_id": "user"})
    assert mine == {key(library, n) for n in ("graphene", "yeast", "coffee")}


async def test_a_collection_is_its_own_items_and_with_subcollections_those_below_it_too(service, library):
    physics = {"kind": "collection", "library_id": "user", "collection_key": collection(library, "physics")}
    assert await items_in(service, physics) == {key(library, "graphene")}
    biology = {"kind": "collection", "library_id": "user", "collection_key": collection(library, "biology")}
    alone = await ask(service, biology)
    assert alone.scope_empty and alone.chunks == [] and alone.error is None  # Biology holds no item itself
    assert await items_in(service, {**biology, "subcollections": True}) == {key(library, "yeast")}


async def test_a_tag_scope_is_the_items_carrying_it_whoever_added_the_tag(service, library):
    tagged = await items_in(service, {"kind": "tag", "library_id": "user", "tag": "to-read"})
    assert tagged == {key(library, "yeast"), key(library, "coffee")}


async def test_an_attachment_scope_is_that_file_only(service, library):
    scope = {"kind": "attachment", "library_id": "user", "attachment_key": key(library, "coffee_pdf")}
    found = await ask(service, scope)
    assert found.chunks and {c.attachment_key for c in found.chunks} == {key(library, "coffee_pdf")}


async def test_an_items_scope_spans_libraries_and_stays_inside_the_named_one(service, library):
    scope = {
        "kind": "items",
        "items": [
            {"library_id": "user", "item_key": key(library, "coffee")},
            {"library_id": "group-99", "item_key": key(library, "neuron")},
        ],
    }
    assert await items_in(service, scope) == {key(library, "coffee"), key(library, "neuron")}
    assert await items_in(service, scope, library_id="user") == {key(library, "coffee")}


async def test_an_empty_scope_says_so_rather_than_finding_nothing(service, library):
    for scope in (
        {"kind": "collection", "library_id": "user", "collection_key": collection(library, "empty")},
        {"kind": "tag", "library_id": "user", "tag": "nobody-uses-this"},
        {"kind": "library", "library_id": "group-12345"},
        {"kind": "items", "items": [{"library_id": "user", "item_key": "ZZZZZZZZ"}]},
    ):
        found = await ask(service, scope)
        assert (found.error, found.chunks, found.scope_empty) == (None, [], True), scope


async def test_a_scope_never_reaches_another_user(service, library):
    """Mallory names the local user's library, collection, tag and file: she has no index here,
    so she is told that, never shown a passage."""
    for scope in (
        {"kind": "library", "library_id": "user"},
        {"kind": "tag", "library_id": "user", "tag": "to-read"},
        {"kind": "attachment", "library_id": "user", "attachment_key": key(library, "coffee_pdf")},
        {
            "kind": "collection",
            "library_id": "user",
            "collection_key": collection(library, "biology"),
            "subcollections": True,
        },
    ):
        found = await ask(service, scope, user="mallory")
        assert found.chunks == [] and not found.scope_empty and found.error.code == "not_available"


async def test_the_outline_lists_collections_in_their_tree_and_tags_with_their_items(service, library):
    ask_for = {"user_id": "local", **ENVELOPE}
    collections = await service.outline(LibraryOutlineRequested(**ask_for, part="collections"))
    assert [lib.library_id for lib in collections.libraries] == ["user", "group-99"]
    assert collections.libraries[1].name == "Neuro lab"
    by_name = {c.name: c for c in collections.collections}
    assert set(by_name) == {"Physics", "Biology", "Yeast", "Empty", "Neuro"}
    assert by_name["Yeast"].parent_key == by_name["Biology"].key
    assert (by_name["Biology"].items, by_name["Yeast"].items, by_name["Neuro"].library_id) == (0, 1, "group-99")
    assert collections.tags == []
    tags = await service.outline(LibraryOutlineRequested(**ask_for, part="tags"))
    assert {(t.library_id, t.tag, t.items) for t in tags.tags} == {("user", "materials", 1), ("user", "to-read", 2)}
    nobody = await service.outline(LibraryOutlineRequested(**{**ask_for, "user_id": "mallory"}, part="tags"))
    assert (nobody.libraries, nobody.tags, nobody.error) == ([], [], None)


async def test_moving_and_retagging_items_updates_the_index_in_place_without_re_embedding(service, library):
    builder, ids, cols = library
    coffee_scope = {"kind": "collection", "library_id": "user", "collection_key": collection(library, "physics")}
    before = sum(1 for _ in service.store.scroll(tenant_filter(Tenant("local")), ["text"]))
    builder.set_collections(ids["coffee"][0], [cols["physics"]])
    builder.remove_tag(ids["yeast"][0], "to-read")
    builder.add_tag(ids["graphene"][0], "to-read")
    progress = await service.ingest_zotero(builder.dir, "local")
    assert (progress.state, progress.indexed, progress.placed) == ("done", 0, 3)  # 3 sources: 2 PDFs and a note
    assert sum(1 for _ in service.store.scroll(tenant_filter(Tenant("local")), ["text"])) == before
    assert await items_in(service, coffee_scope) == {key(library, "graphene"), key(library, "coffee")}
    tagged = await items_in(service, {"kind": "tag", "library_id": "user", "tag": "to-read"})
    assert tagged == {key(library, "graphene"), key(library, "coffee")}
    again = await service.ingest_zotero(builder.dir, "local")
    assert (again.indexed, again.placed, again.unchanged) == (0, 0, again.sources_total)


def version_5_hash(src, ingestor) -> str:
    """The content hash index version 5 wrote, as its code computed it (commit 3aa21d4 of
    ingest.py): the item's payload then held its collection paths and no keys or tags."""
    item = src.item
    payload = {
        "item_key": item.key,
        "item_type": item.item_type,
        "title": item.title,
        "creators": [c.model_dump() for c in item.creators],
        "year": item.year,
        "publication": item.publication,
        "doi": item.doi,
        "collections": list(item.collections),
    }
    shape = {"v": "5", "tokens": ingestor.chunk_tokens, "model": ingestor.embedder.name, "kind": src.kind}
    h = hashlib.sha256(json.dumps({**shape, "item": payload}, sort_keys=True, default=str).encode())
    if src.note_html is not None:
        h.update(src.note_html.encode())
    else:
        h.update(src.path.read_bytes())
    return h.hexdigest()[:32]


async def test_an_index_of_version_5_is_indexed_again_once_for_its_pages(service, library):
    builder = library[0]
    store, ingestor = service.store, service.ingestor
    sources = {(s.library_id, s.key): s for s in read_library(builder.dir).sources}
    q = store.q  # rewrite the index as version 5 left it: no placement fields, the old hashes
    for (lib, source_key), src in sources.items():
        where = store._filter(tenant_filter(Tenant("local", lib), ("source_key", source_key)))
        store.shard.update(q.UpdateOperation.delete_payload_by_filter(where, [COLLECTIONS_FIELD, TAGS_FIELD]))
        store.set_payload(
            tenant_filter(Tenant("local", lib), ("source_key", source_key)),
            {"content_hash": version_5_hash(src, ingestor)},
        )
    assert all(s.placement is None for s in indexed_sources(store, Tenant("local")).values())

    # Index version 7 gave chunks their pages, which only a new conversion knows: no migration
    # in place (5 to 6 was one) may mark such an index current.
    progress = await service.ingest_zotero(builder.dir, "local")
    assert (progress.state, progress.indexed, progress.placed) == ("done", len(sources), 0)
    indexed = indexed_sources(store, Tenant("local"))
    assert all(s.placement is not None for s in indexed.values())
    assert await items_in(service, {"kind": "tag", "library_id": "user", "tag": "materials"}) == {
        key(library, "graphene")
    }
    again = await service.ingest_zotero(builder.dir, "local")
    assert (again.indexed, again.placed) == (0, 0)  # the new hashes were written with the fields
