"""One test suite for both store implementations: embedded qdrant-edge and qdrant-client
(local mode standing in for a server)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from qdrant_client import QdrantClient

from zocrates_retrieval.adapters.store import (
    ChunkPoint,
    EdgeStore,
    ServerStore,
    SparseEncoder,
    StoreError,
    Tenant,
    count_chunks,
    delete_source,
    delete_tenant,
    indexed_sources,
    point_id,
    query_chunks,
)

DIM = 8
SPARSE = SparseEncoder()
# qdrant-client's local mode says it ignores HNSW parameters (it searches exactly): expected here
pytestmark = pytest.mark.filterwarnings("ignore:Local mode performs exact:UserWarning")


@pytest.fixture(params=["edge", "server"])
def store(request, tmp_path):
    if request.param == "edge":
        s = EdgeStore(tmp_path / "edge", DIM)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = ServerStore(QdrantClient(":memory:"), "chunks", DIM)
    yield s
    s.close()


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def point(user: str, library: str, source: str, no: int, text: str, digest: str = "h1", seed: int = 0) -> ChunkPoint:
    return ChunkPoint(
        point_id(user, library, source, no),
        vec(seed),
        SPARSE.document(text),
        {
            "user_id": user,
            "library_id": library,
            "source_key": source,
            "chunk_no": no,
            "content_hash": digest,
            "text": text,
            "item_key": f"I{source}",
        },
    )


def texts(hits) -> list[str]:
    return [h.payload["text"] for h in hits]


def test_modes_rank_the_matching_chunk_first(store):
    store.upsert(
        [
            point("ann", "user", "A", 0, "graphene thermal conductivity measured", seed=1),
            point("ann", "user", "A", 1, "protein folding in yeast cells", seed=2),
            point("ann", "user", "B", 0, "economics of coffee trade", seed=3),
        ]
    )
    t = Tenant("ann")
    assert texts(query_chunks(store, t, dense=vec(2), sparse=None, limit=1, mode="dense")) == [
        "protein folding in yeast cells"
    ]
    lexical = query_chunks(store, t, dense=None, sparse=SPARSE.query("graphene conductivity"), limit=5, mode="lexical")
    assert texts(lexical) == ["graphene thermal conductivity measured"]
    hybrid = query_chunks(store, t, dense=vec(3), sparse=SPARSE.query("graphene"), limit=3, mode="hybrid")
    assert set(texts(hybrid)[:2]) == {"economics of coffee trade", "graphene thermal conductivity measured"}
    # a query of stop words only falls back to dense
    assert (
        query_chunks(store, t, dense=vec(1), sparse=SPARSE.query("the of and"), limit=1)[0].payload["source_key"] == "A"
    )


def test_every_query_is_confined_to_its_tenant_and_library(store):
    store.upsert(
        [
            point("ann", "user", "A", 0, "shared words about heat", seed=1),
            point("ann", "group-7", "G", 0, "shared words about heat in the group", seed=1),
            point("bob", "user", "B", 0, "shared words about heat from bob", seed=1),
        ]
    )
    for mode in ("dense", "lexical", "hybrid"):
        ann = query_chunks(store, Tenant("ann"), dense=vec(1), sparse=SPARSE.query("heat"), limit=10, mode=mode)
        assert {h.payload["user_id"] for h in ann} == {"ann"} and len(ann) == 2
        group = query_chunks(
            store, Tenant("ann", "group-7"), dense=vec(1), sparse=SPARSE.query("heat"), limit=10, mode=mode
        )
        assert [h.payload["source_key"] for h in group] == ["G"]
        assert (
            query_chunks(store, Tenant("carol"), dense=vec(1), sparse=SPARSE.query("heat"), limit=10, mode=mode) == []
        )


def test_upserts_are_idempotent_and_versions_replace_each_other(store):
    first = [point("ann", "user", "A", n, f"version one part {n}", "h1") for n in range(3)]
    store.upsert(first)
    store.upsert(first)  # a redelivered message
    assert count_chunks(store, Tenant("ann")) == 3
    store.upsert([point("ann", "user", "A", 0, "version two", "h2")])
    delete_source(store, Tenant("ann", "user"), "A", keep_hash="h2")
    assert count_chunks(store, Tenant("ann")) == 1
    assert {k: v.content_hash for k, v in indexed_sources(store, Tenant("ann")).items()} == {("user", "A"): "h2"}


def test_deleting_one_tenant_leaves_the_others(store):
    store.upsert([point("ann", "user", "A", 0, "a"), point("bob", "user", "A", 0, "b")])
    delete_tenant(store, Tenant("ann"))
    assert count_chunks(store, Tenant("ann")) == 0
    assert count_chunks(store, Tenant("bob")) == 1


def test_an_empty_user_id_is_refused():
    with pytest.raises(ValueError):
        Tenant("")


def test_edge_store_persists_and_refuses_a_second_process_or_another_dimension(tmp_path):
    store = EdgeStore(tmp_path / "edge", DIM)
    store.upsert([point("ann", "user", "A", 0, "kept across restarts")])
    with pytest.raises(StoreError, match="in use by another process"):
        EdgeStore(tmp_path / "edge", DIM)
    store.close()
    with pytest.raises(StoreError, match="embedding model changed"):
        EdgeStore(tmp_path / "edge", DIM * 2)
    reopened = EdgeStore(tmp_path / "edge", DIM)
    assert count_chunks(reopened, Tenant("ann")) == 1
    reopened.close()


def test_hnsw_recall_against_exact_search_on_real_embeddings(tmp_path, embedder, pdf_dir):
    """The optimised HNSW index finds what exact search finds (recall@10 >= 0.95).

    The filler is spread around the real chunks (sigma 0.2). Tighter clusters (sigma 0.08)
    cap HNSW's recall near 0.9 at any ef: the graph of near-copies stops being navigable.
    A real library is not 250 near-copies of each passage."""
    from zocrates_retrieval.convert import convert_file
    from zocrates_retrieval.domain.chunking import chunk_blocks

    doc = convert_file(pdf_dir / "cermine" / "test1.pdf", "application/pdf")
    chunks = chunk_blocks(doc.blocks, 64, embedder.count_tokens)
    vectors = embedder.embed_documents([c.text for c in chunks])
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    # enough points that HNSW really is used: the real chunks plus noise around them (over the ~10 MB indexing threshold)
    rng = np.random.default_rng(0)
    noise = vectors[rng.integers(0, len(vectors), 9_000)] + rng.normal(0, 0.2, (9_000, embedder.dim))
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    all_vectors = np.vstack([vectors, noise]).astype(np.float32)
    for start in range(0, len(all_vectors), 2000):
        store.upsert(
            [
                ChunkPoint(
                    point_id("ann", "user", "S", n),
                    all_vectors[n],
                    ([1], [1.0]),
                    {"user_id": "ann", "library_id": "user", "source_key": "S", "chunk_no": n},
                )
                for n in range(start, min(start + 2000, len(all_vectors)))
            ]
        )
    store.optimize()
    queries = embedder.embed_documents(
        [
            "bleeding complications of heparin",
            "inferior vena cava filters",
            "sequential compression devices",
            "how the systematic review was done",
            "thrombosis risk of trauma patients",
            # twenty queries: the HNSW build is not deterministic, and with 50 hits one near-tie
            # more (0.94) failed a run that usually finds 0.96 to 1.0; with 100 hits, 0.94 once more
            "pulmonary embolism after injury",
            "low molecular weight heparin dosing",
            "failed retrieval of filters",
            "databases searched for publications",
            "patient compliance with mechanical prophylaxis",
            "heparin induced thrombocytopenia rate",
            "soft tissue injury from compression devices",
            "prophylactic filter placement in high risk patients",
            "deep venous thrombosis incidence",
            "complications of filter insertion",
            "anticoagulation contraindicated after brain injury",
            "spinal cord injury with paraplegia",
            "level one evidence for prophylaxis",
            "filter migration and fracture",
            "recommendations for future studies",
        ]
    )
    found = 0
    for q in queries:
        scores = all_vectors @ q
        tenth = np.sort(scores)[-10]
        hits = query_chunks(store, Tenant("ann"), dense=q, sparse=None, limit=10, mode="dense")
        # a hit is right when exact search ranks it in the top 10; near-copies tie within float error
        found += sum(scores[h.payload["chunk_no"]] >= tenth - 1e-5 for h in hits)
    store.close()
    assert found / (10 * len(queries)) >= 0.95
