"""A scope never reaches outside its tenant: a property test over random libraries (points
in users' libraries, items, files, collections and tags), random scopes and random tenants,
against both store implementations; and the pure mapping from a scope to index narrowings."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from qdrant_client import QdrantClient

from zocrates_contracts import RetrievalRequested
from zocrates_contracts.scopes import RetrievalScope
from zocrates_retrieval.adapters.store import (
    COLLECTIONS_FIELD,
    ITEM_FIELD,
    LIBRARY_FIELD,
    TAGS_FIELD,
    ChunkPoint,
    EdgeStore,
    Narrowing,
    ServerStore,
    SparseEncoder,
    Tenant,
    count_chunks,
    point_id,
    query_chunks,
)
from zocrates_retrieval.adapters.zotero import Collection
from zocrates_retrieval.scope import Outline, narrowings

DIM = 8
SPARSE = SparseEncoder()
SCOPE = TypeAdapter(RetrievalScope)
USERS = ["ann", "bob", "carol"]
LIBRARIES = ["user", "group-1", "group-2"]
ITEMS = ["ITEM0001", "ITEM0002", "ITEM0003", "ITEM0004"]
FILES = ["FILE0001", "FILE0002", "FILE0003"]
COLLECTIONS = ["COLL0001", "COLL0002", "COLL0003", "COLL0004"]
TAGS = ["to-read", "methods", "review"]
#: One collection tree for every library: COLL0001 > COLL0002 > COLL0003; COLL0004 alone.
TREE = Outline(
    collections=[
        Collection(lib, key, key, parent)
        for lib in LIBRARIES
        for key, parent in [("COLL0001", None), ("COLL0002", "COLL0001"), ("COLL0003", "COLL0002"), ("COLL0004", None)]
    ]
)
BELOW = {"COLL0001": {"COLL0001", "COLL0002", "COLL0003"}, "COLL0002": {"COLL0002", "COLL0003"}}

points = st.lists(
    st.fixed_dictionaries(
        {
            "user_id": st.sampled_from(USERS),
            "library_id": st.sampled_from(LIBRARIES),
            "item_key": st.sampled_from(ITEMS),
            "attachment_key": st.one_of(st.none(), st.sampled_from(FILES)),
            "collection_keys": st.lists(st.sampled_from(COLLECTIONS), unique=True, max_size=2),
            "tags": st.lists(st.sampled_from(TAGS), unique=True, max_size=2),
            "seed": st.integers(0, 10_000),
        }
    ),
    min_size=1,
    max_size=30,
)
libraries = st.sampled_from(LIBRARIES)
scopes = st.one_of(
    st.builds(lambda lib: {"kind": "library", "library_id": lib}, libraries),
    st.builds(
        lambda lib, key, sub: {"kind": "collection", "library_id": lib, "collection_key": key, "subcollections": sub},
        libraries,
        st.sampled_from(COLLECTIONS),
        st.booleans(),
    ),
    st.builds(lambda lib, tag: {"kind": "tag", "library_id": lib, "tag": tag}, libraries, st.sampled_from(TAGS)),
    st.builds(
        lambda refs: {"kind": "items", "items": [{"library_id": lib, "item_key": key} for lib, key in refs]},
        st.lists(st.tuples(libraries, st.sampled_from(ITEMS)), min_size=1, max_size=5),
    ),
    st.builds(
        lambda lib, key: {"kind": "attachment", "library_id": lib, "attachment_key": key},
        libraries,
        st.sampled_from(FILES),
    ),
)


def in_scope(p: dict, scope: dict) -> bool:
    """The scope's meaning, written out independently of `narrowings`."""
    if scope["kind"] == "items":
        return any(p["library_id"] == r["library_id"] and p["item_key"] == r["item_key"] for r in scope["items"])
    if p["library_id"] != scope["library_id"]:
        return False
    if scope["kind"] == "collection":
        key = scope["collection_key"]
        wanted = BELOW.get(key, {key}) if scope["subcollections"] else {key}
        return bool(wanted & set(p["collection_keys"]))
    if scope["kind"] == "tag":
        return scope["tag"] in p["tags"]
    if scope["kind"] == "attachment":
        return p["attachment_key"] == scope["attachment_key"]
    return True


def open_store(backend: str, tmp: str):
    if backend == "edge":
        return EdgeStore(Path(tmp) / "edge", DIM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ServerStore(QdrantClient(":memory:"), "chunks", DIM)


@pytest.mark.fuzz
@pytest.mark.parametrize("backend", ["edge", "server"])
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    population=points,
    scope=scopes,
    user=st.sampled_from(USERS),
    library=st.one_of(st.none(), libraries),
    mode=st.sampled_from(["dense", "lexical", "hybrid"]),
)
def test_a_scope_never_reaches_outside_its_tenant_and_finds_all_that_is_inside(
    backend, population, scope, user, library, mode
):
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(backend, tmp)
        try:
            owned = {}
            for n, p in enumerate(population):
                pid = point_id(p["user_id"], p["library_id"], f"S{n}", 0)
                payload = {k: v for k, v in p.items() if k != "seed"}
                payload |= {"source_key": f"S{n}", "chunk_no": 0, "content_hash": "h", "text": "heat graphene yeast"}
                vec = np.random.default_rng(p["seed"]).normal(size=DIM).astype(np.float32)
                store.upsert([ChunkPoint(pid, vec, SPARSE.document(payload["text"]), payload)])
                owned[pid] = p
            tenant = Tenant(user, library)
            parsed = SCOPE.validate_python(scope)
            allowed = {
                pid
                for pid, p in owned.items()
                if p["user_id"] == user and (library is None or p["library_id"] == library) and in_scope(p, scope)
            }
            got: set[str] = set()
            within = narrowings(parsed, TREE)
            for narrowing in within:
                hits = query_chunks(
                    store,
                    tenant,
                    dense=np.ones(DIM),
                    sparse=SPARSE.query("heat"),
                    limit=100,
                    mode=mode,
                    within=narrowing,
                )
                got |= {h.id for h in hits}
                assert all(h.payload["user_id"] == user for h in hits)
            assert got <= allowed, f"{tenant} with scope {scope} received chunks outside it: {got - allowed}"
            assert got == allowed  # every chunk carries the query's words and the limit is above them all
            assert sum(count_chunks(store, tenant, n) for n in within) == len(allowed)
        finally:
            store.close()


# --- the mapping from scope to index narrowings (pure) ----------------------------------------

FAMILY = Outline(
    collections=[
        Collection("user", "AAAAAAAA", "Top"),
        Collection("user", "BBBBBBBB", "Child", "AAAAAAAA"),
        Collection("user", "CCCCCCCC", "Grandchild", "BBBBBBBB"),
        Collection("user", "DDDDDDDD", "Other"),
        Collection("group-1", "BBBBBBBB", "Same key, other library", "AAAAAAAA"),
    ]
)


def test_each_kind_of_scope_becomes_a_narrowing_of_one_library():
    def one(scope: dict, outline=None) -> list[Narrowing]:
        return narrowings(SCOPE.validate_python(scope), outline)

    assert one({"kind": "library", "library_id": "group-1"}) == [Narrowing("group-1")]
    top = {"kind": "collection", "library_id": "user", "collection_key": "AAAAAAAA"}
    assert one(top, FAMILY) == [Narrowing("user", COLLECTIONS_FIELD, ("AAAAAAAA",))]
    assert one({**top, "subcollections": True}, FAMILY) == [
        Narrowing("user", COLLECTIONS_FIELD, ("AAAAAAAA", "BBBBBBBB", "CCCCCCCC"))
    ]
    assert one({**top, "subcollections": True}) == [Narrowing("user", COLLECTIONS_FIELD, ("AAAAAAAA",))]
    assert one({"kind": "tag", "library_id": "user", "tag": "  to read "}) == [
        Narrowing("user", TAGS_FIELD, ("to read",))
    ]
    items = {
        "kind": "items",
        "items": [
            {"library_id": "user", "item_key": "K1K1K1K1"},
            {"library_id": "group-1", "item_key": "K2K2K2K2"},
            {"library_id": "user", "item_key": "K1K1K1K1"},
        ],
    }
    assert one(items) == [Narrowing("user", ITEM_FIELD, ("K1K1K1K1",)), Narrowing("group-1", ITEM_FIELD, ("K2K2K2K2",))]


def test_a_cycle_in_a_damaged_collection_tree_is_walked_once():
    loop = Outline(
        collections=[Collection("user", "AAAAAAAA", "A", "BBBBBBBB"), Collection("user", "BBBBBBBB", "B", "AAAAAAAA")]
    )
    assert loop.with_descendants("user", "AAAAAAAA") == ["AAAAAAAA", "BBBBBBBB"]


def test_a_version_2_request_scope_still_reads_as_items_and_bad_scopes_are_refused():
    v2 = {
        "turn_id": "t",
        "session_id": "s",
        "user_id": "u",
        "reply_to": "r",
        "query": "q",
        "schema_version": 2,
        "scope": {"items": [{"library_id": "user", "item_key": "ABCD1234"}]},
    }
    request = RetrievalRequested.model_validate(v2)
    assert request.scope.kind == "items" and request.scope.items[0].item_key == "ABCD1234"
    for bad in (
        {"kind": "tag", "library_id": "user", "tag": "   "},
        {"kind": "library", "library_id": "everyone"},
        {"kind": "collection", "library_id": "user", "collection_key": "../etc"},
        {"kind": "items", "items": []},
        {"kind": "attachment", "library_id": "user"},
        {"kind": "everything"},
    ):
        with pytest.raises(ValidationError):
            SCOPE.validate_python(bad)


def test_a_narrowing_admits_only_its_library_and_values():
    n = Narrowing("user", TAGS_FIELD, ("a",))
    assert n.admits({LIBRARY_FIELD: "user", TAGS_FIELD: ["b", "a"]})
    assert not n.admits({LIBRARY_FIELD: "group-1", TAGS_FIELD: ["a"]})
    assert not n.admits({LIBRARY_FIELD: "user", TAGS_FIELD: []})
    with pytest.raises(ValueError):
        Narrowing("user", TAGS_FIELD, ())
    with pytest.raises(ValueError):
        Narrowing("user", "user_id", ("ann",))
