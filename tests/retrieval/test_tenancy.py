"""Tenant isolation: a property test over random tenants, documents and queries (S-QD-1),
and a lint guard that nothing but the repository function queries Qdrant."""

from __future__ import annotations

import ast
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test
from qdrant_client import QdrantClient

import zocrates_retrieval
from zocrates_retrieval.adapters.store import (
    ChunkPoint,
    EdgeStore,
    ServerStore,
    SparseEncoder,
    Tenant,
    count_chunks,
    delete_tenant,
    point_id,
    query_chunks,
)

DIM = 8
SPARSE = SparseEncoder()
WORDS = ["heat", "graphene", "protein", "yeast", "coffee", "trade", "neuron", "spike", "boron", "nitride"]
users = st.sampled_from(["ann", "bob", "carol", "dave"])
libraries = st.sampled_from(["user", "group-1", "group-2"])


class TenantLeakMachine(RuleBasedStateMachine):
    """Random upserts, deletes and queries against a store and a model of who owns what."""

    backend = "edge"

    @initialize()
    def open_store(self):
        if self.backend == "edge":
            self.tmp = tempfile.TemporaryDirectory()
            self.store = EdgeStore(Path(self.tmp.name) / "edge", DIM)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.store = ServerStore(QdrantClient(":memory:"), "chunks", DIM)
        self.owned: dict[tuple[str, str], set[str]] = {}  # (user, library) -> point ids
        self.queries = 0

    @rule(
        user=users,
        library=libraries,
        doc=st.integers(0, 5),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=6),
        seed=st.integers(0, 1000),
    )
    def add_chunk(self, user, library, doc, words, seed):
        pid = point_id(user, library, f"D{doc}", 0)
        vec = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
        self.store.upsert(
            [
                ChunkPoint(
                    pid,
                    vec,
                    SPARSE.document(" ".join(words)),
                    {
                        "user_id": user,
                        "library_id": library,
                        "source_key": f"D{doc}",
                        "chunk_no": 0,
                        "content_hash": "h",
                        "text": " ".join(words),
                    },
                )
            ]
        )
        self.owned.setdefault((user, library), set()).add(pid)

    @rule(user=users)
    def delete_user(self, user):
        before = {u: count_chunks(self.store, Tenant(u)) for u in ("ann", "bob", "carol", "dave") if u != user}
        delete_tenant(self.store, Tenant(user))
        for key in [k for k in self.owned if k[0] == user]:
            del self.owned[key]
        after = {u: count_chunks(self.store, Tenant(u)) for u in before}
        assert after == before  # deleting one tenant leaves every other one as it was

    @rule(
        user=users,
        library=st.one_of(st.none(), libraries),
        mode=st.sampled_from(["dense", "lexical", "hybrid"]),
        words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
        seed=st.integers(0, 1000),
    )
    def query(self, user, library, mode, words, seed):
        tenant = Tenant(user, library)
        vec = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
        hits = query_chunks(self.store, tenant, dense=vec, sparse=SPARSE.query(" ".join(words)), limit=50, mode=mode)
        self.queries += 1
        allowed = set().union(
            *(ids for (u, lib), ids in self.owned.items() if u == user and (library is None or lib == library))
        )
        got = {h.id for h in hits}
        assert got <= allowed, f"{tenant} received another tenant's chunks: {got - allowed}"
        for h in hits:
            assert h.payload["user_id"] == user
        if mode == "dense":  # every owned chunk is reachable by a dense query with a high limit
            assert got == allowed

    @invariant()
    def counts_match(self):
        if not hasattr(self, "store"):
            return
        for user in ("ann", "bob"):
            expected = sum(len(ids) for (u, _), ids in self.owned.items() if u == user)
            assert count_chunks(self.store, Tenant(user)) == expected

    def teardown(self):
        if hasattr(self, "store"):
            self.store.close()
        if hasattr(self, "tmp"):
            self.tmp.cleanup()


class ServerTenantLeakMachine(TenantLeakMachine):
    backend = "server"


_settings = settings(
    max_examples=15, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.mark.fuzz
@pytest.mark.parametrize("machine", [TenantLeakMachine, ServerTenantLeakMachine], ids=["edge", "server"])
def test_no_tenant_ever_sees_another_tenants_chunks(machine):
    run_state_machine_as_test(machine, settings=_settings)


# --- lint: only the repository function queries Qdrant ---------------------------------------

QUERY_METHODS = {
    "query",
    "query_batch",
    "query_points",
    "query_batch_points",
    "query_points_groups",
    "search",
    "search_batch",
    "search_groups",
    "recommend",
    "discover",
    "search_matrix_pairs",
}
PACKAGE = Path(zocrates_retrieval.__file__).parent


def _modules():
    for path in sorted(PACKAGE.glob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def _enclosing_functions(tree: ast.AST):
    """(function name, node) for every call, with the innermost enclosing function's name."""

    def walk(node, func):
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call):
                yield name, child
            yield from walk(child, name)

    yield from walk(tree, None)


def test_only_the_store_module_imports_qdrant():
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] in ("qdrant_edge", "qdrant_client") for n in names):
                assert path.name == "store.py", f"{path.name} imports {names}: only store.py may talk to Qdrant"


def test_only_store_search_methods_call_qdrant_queries_and_only_query_chunks_calls_them():
    for path, tree in _modules():
        for func, call in _enclosing_functions(tree):
            if not isinstance(call.func, ast.Attribute):
                continue
            attr = call.func.attr
            receiver = ast.unparse(call.func.value)
            if attr in QUERY_METHODS and receiver in ("self.shard", "self.client", "shard", "client"):
                assert (path.name, func) == ("store.py", "_search"), (
                    f"{path.name}:{call.lineno} {func}() queries Qdrant directly; go through store.query_chunks"
                )
            if attr == "_search":
                assert (path.name, func) == ("store.py", "query_chunks"), (
                    f"{path.name}:{call.lineno} {func}() calls a store's raw _search; use store.query_chunks"
                )


def test_the_lint_guard_catches_a_direct_query(tmp_path):
    """The guard above must be able to fail: a module that queries directly is found."""
    bad = ast.parse("def helper(self):\n    return self.shard.query(request)\n")
    offenders = [
        (f, c)
        for f, c in _enclosing_functions(bad)
        if isinstance(c.func, ast.Attribute) and c.func.attr in QUERY_METHODS
    ]
    assert [f for f, _ in offenders] == ["helper"]
