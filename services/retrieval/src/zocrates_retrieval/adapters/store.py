"""The chunk index: one small store interface, two Qdrant implementations, one tenant gate.

One collection holds every user's chunks. The tenant is the payload field `user_id`
(indexed with `is_tenant`, so Qdrant keeps each tenant's points together), narrowed to one
Zotero library by `library_id` when a request names one (RELIABILITY.md section 5).

A question's scope (`Narrowing`: one library, and there some of its items, collections, tags
or one attachment) is ANDed inside that gate, on indexed payload fields: `item_key`,
`attachment_key`, `collection_keys` (the collections the item is directly in) and `tags`.
The last two describe where an item sits, not what its text is: they change without
re-embedding (`set_placement`).

Tenancy is enforced here and nowhere else:
- `tenant_filter()` is the only place a tenant (and a narrowing) becomes a filter;
- `query_chunks()` is the only caller of a store's `_search`, and `_search` is the only code
  that calls Qdrant's query API; a test parses the package to keep it so;
- the other tenant operations (count, delete, list what is indexed) also take a `Tenant`.

`EdgeStore` is the embedded default (`qdrant-edge-py`: Qdrant's engine in-process, HNSW,
payload indexes, BM25 with IDF over the tenant's own chunks). `ServerStore` talks to a Qdrant
server through `qdrant-client`; its `":memory:"` local mode is a brute-force emulator that the
tests use to run the same suite against this implementation.
"""

from __future__ import annotations

import base64
import fcntl
import re
import shutil
import subprocess
import sys
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import structlog
from breame.data.spelling_constants import AMERICAN_ENGLISH_SPELLINGS, BRITISH_ENGLISH_SPELLINGS

from zocrates_retrieval.domain.searchable import searchable
from zocrates_runtime.durable import fsync_dir

log = structlog.get_logger(__name__)

TENANT_FIELD = "user_id"
LIBRARY_FIELD = "library_id"
ITEM_FIELD = "item_key"
ATTACHMENT_FIELD = "attachment_key"
COLLECTIONS_FIELD = "collection_keys"
TAGS_FIELD = "tags"
#: The payload fields that say where an item sits in its library (`set_placement`).
PLACEMENT_FIELDS = (COLLECTIONS_FIELD, TAGS_FIELD)
DENSE, SPARSE = "dense", "bm25"
# Hybrid search sums the dense and the BM25 scores, each normalised by its own spread over
# the candidates (Qdrant's distribution-based score fusion, DBSF). Reciprocal rank fusion ranked
# a passage only one list found below the many both ranked in the middle; on SciFact's 809 judged
# claims DBSF's nDCG@10 is 0.739 against RRF's 0.714 (docs/answer-relevance.md, "Retrieval's fusion").
Mode = Literal["dense", "lexical", "hybrid"]

#: Namespace of point ids: uuid5(namespace, "<user>/<library>/<source>/<chunk no>").
POINT_NAMESPACE = uuid.UUID("6f1c9e0a-3d4b-5a7e-9c2f-7a8b9d0e1f23")

#: Payload fields with an index (keyword unless listed as integer).
KEYWORD_INDEXES = (LIBRARY_FIELD, "source_key", ITEM_FIELD, "content_hash", ATTACHMENT_FIELD, *PLACEMENT_FIELDS)
INTEGER_INDEXES = ("chunk_no",)


class StoreError(RuntimeError):
    """The index cannot be opened or used (wrong dimension, locked, unreachable server)."""


@dataclass(frozen=True)
class Tenant:
    """Whose chunks: a user, optionally narrowed to one of their Zotero libraries (part of a
    library is a `Narrowing`)."""

    user_id: str
    library_id: str | None = None

    def __post_init__(self) -> None:
        if not self.user_id:
            raise ValueError("a tenant needs a non-empty user_id")


def point_id(user_id: str, library_id: str, source_key: str, chunk_no: int) -> str:
    """Deterministic point id, so a re-ingest or a redelivered message overwrites, never duplicates."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{user_id}/{library_id}/{source_key}/{chunk_no}"))


def encode_vectors(vectors: np.ndarray) -> str:
    """Vectors as a payload string: float16 rows, base64 (768 bytes a 384-dim vector as
    binary, 1,024 as text); a unit's similarity needs no more precision than that."""
    return base64.b64encode(np.asarray(vectors, dtype="<f2").tobytes()).decode("ascii")


def decode_vectors(text: str | None, dim: int) -> np.ndarray:
    """The rows `encode_vectors` wrote, as float32 (an empty matrix for none)."""
    raw = base64.b64decode(text or "")
    return np.frombuffer(raw, dtype="<f2").astype(np.float32).reshape(-1, dim)


@dataclass
class ChunkPoint:
    id: str
    dense: np.ndarray | None  # None: found by its words only until it is embedded
    sparse: tuple[list[int], list[float]]
    payload: dict


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    payload: dict


#: The fields a narrowing may match on (each a keyword index).
NARROWING_FIELDS = (ITEM_FIELD, ATTACHMENT_FIELD, COLLECTIONS_FIELD, TAGS_FIELD)


@dataclass(frozen=True)
class Narrowing:
    """Part of one library: the chunks whose `field` holds one of `values` (for a list field
    such as `tags`, any of its elements); with no `field`, the whole library."""

    library_id: str
    field: str | None = None
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.field is not None and self.field not in NARROWING_FIELDS:
            raise ValueError(f"a narrowing matches on one of {NARROWING_FIELDS}, not {self.field!r}")
        if self.field is not None and not self.values:
            raise ValueError("a narrowing by a field needs at least one value (an empty one matches nothing)")

    def admits(self, payload: dict) -> bool:
        """Whether a chunk's payload lies inside (the re-check of every hit)."""
        if payload.get(LIBRARY_FIELD) != self.library_id:
            return False
        if self.field is None:
            return True
        have = payload.get(self.field)
        have = have if isinstance(have, list) else [have]
        return any(v in self.values for v in have)


@dataclass(frozen=True)
class Conditions:
    """A store-neutral filter: every `must` field equals its value, every `any_of` field holds
    one of its values, no `must_not` one equals its value."""

    must: tuple[tuple[str, str | int], ...]
    must_not: tuple[tuple[str, str | int], ...] = ()
    any_of: tuple[tuple[str, tuple[str, ...]], ...] = ()


def tenant_filter(
    tenant: Tenant,
    *must: tuple[str, str | int],
    must_not: tuple[tuple[str, str | int], ...] = (),
    within: Narrowing | None = None,
) -> Conditions:
    """The one place a tenant becomes a filter; extra conditions and a narrowing are ANDed
    with it, so they can only narrow it (a narrowing to another library than the tenant's
    matches nothing)."""
    base = [(TENANT_FIELD, tenant.user_id)]
    if tenant.library_id is not None:
        base.append((LIBRARY_FIELD, tenant.library_id))
    any_of: tuple[tuple[str, tuple[str, ...]], ...] = ()
    if within is not None:
        base.append((LIBRARY_FIELD, within.library_id))
        if within.field is not None:
            any_of = ((within.field, tuple(within.values)),)
    return Conditions(tuple(base) + tuple(must), tuple(must_not), any_of)


_HYPHENATED = re.compile(r"\b([A-Za-z0-9]+)-([A-Za-z0-9]+)\b")
_WORD = re.compile(r"[A-Za-z]+")


def other_spelling(word: str) -> str | None:
    """A lower-case word's spelling on the other side of the Atlantic, if it has one (breame's
    word lists: "favourite" and "favorite", "randomised" and "randomized")."""
    return BRITISH_ENGLISH_SPELLINGS.get(word) or AMERICAN_ENGLISH_SPELLINGS.get(word)


@dataclass
class SparseEncoder:
    """BM25 term weights as Qdrant sparse vectors (Qdrant's own tokenizer and stemmer; the IDF
    part is applied by the index, over the tenant's chunks)."""

    language: str = "english"
    _model: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        import qdrant_edge

        self._model = qdrant_edge.Bm25(qdrant_edge.Bm25Config(language=self.language))

    def document(self, text: str) -> tuple[list[int], list[float]]:
        sv = self._model.embed_document(searchable(text))
        return list(sv.indices), list(sv.values)

    def query(self, text: str) -> tuple[list[int], list[float]]:
        text = searchable(text)
        # the tokenizer splits "R-free" into "r" and "free", and a table prints "Rfree": a query
        # also asks for each hyphenated word joined (a passage's tokens are left as they are)
        joined = [a + b for a, b in _HYPHENATED.findall(text)]
        # and a word's other spelling: "favourite" finds an American paper's "favorite", and
        # "tumor" a British paper's "tumour"
        spelt = [other for word in _WORD.findall(text) if (other := other_spelling(word.lower()))]
        sv = self._model.embed_query(" ".join([text, *joined, *spelt]))
        return list(sv.indices), list(sv.values)


class ChunkStore(ABC):
    """What the service needs from an index. Filters arrive as `Conditions` built by
    `tenant_filter`; use the module functions below rather than these methods."""

    dim: int

    @abstractmethod
    def upsert(self, points: list[ChunkPoint]) -> None: ...

    @abstractmethod
    def delete(self, where: Conditions) -> None: ...

    @abstractmethod
    def set_payload(self, where: Conditions, payload: dict) -> None:
        """Set these payload fields on every matching point (vectors untouched)."""

    @abstractmethod
    def count(self, where: Conditions) -> int: ...

    @abstractmethod
    def scroll(self, where: Conditions, fields: list[str] | bool) -> Iterator[dict]:
        """The payloads of the matching points: these `fields`, or every one (True)."""

    @abstractmethod
    def _search(
        self,
        where: Conditions,
        dense: np.ndarray | None,
        sparse: tuple[list[int], list[float]] | None,
        limit: int,
        candidates: int,
        mode: Mode,
    ) -> list[Hit]:
        """Raw query; only `query_chunks` may call it."""

    def optimize(self) -> bool:
        """Build indexes after a bulk load (a no-op where the engine does it by itself); False
        when the build was not done and should be tried again later."""
        return True

    @abstractmethod
    def close(self) -> None: ...


# --- the repository: every read and delete by tenant goes through these ----------------------


def query_chunks(
    store: ChunkStore,
    tenant: Tenant,
    *,
    dense: np.ndarray | None,
    sparse: tuple[list[int], list[float]] | None,
    limit: int,
    candidates: int = 50,
    mode: Mode = "hybrid",
    within: Narrowing | None = None,
) -> list[Hit]:
    """The tenant's best chunks for a query (`within` a narrowing of it): dense, lexical
    (BM25) or both fused (DBSF); best first, equal scores by id.

    The only function that queries the index. It injects the tenant filter, and re-checks
    every hit's tenant (and narrowing) so that an engine bug cannot leak another user's text.
    """
    if mode in ("dense", "hybrid") and dense is None:
        raise ValueError(f"mode {mode!r} needs a dense query vector")
    if sparse is not None and not sparse[0]:
        sparse = None  # the query had only stop words
    if mode == "lexical" and sparse is None:
        return []
    if mode == "hybrid" and sparse is None:
        mode = "dense"
    where = tenant_filter(tenant, within=within)
    hits = store._search(where, dense, sparse, limit, max(candidates, limit), mode)
    safe = [
        h
        for h in hits
        if h.payload.get(TENANT_FIELD) == tenant.user_id
        and (tenant.library_id is None or h.payload.get(LIBRARY_FIELD) == tenant.library_id)
        and (within is None or within.admits(h.payload))
    ]
    if len(safe) != len(hits):
        log.error("index returned chunks of another tenant; dropped", chunks=len(hits) - len(safe))
    # equal scores (two chunks of one text) come from the engine in either order: by id among
    # equals, the same question gets the same passages in the same order
    return sorted(safe, key=lambda h: (-h.score, h.id))


def count_chunks(store: ChunkStore, tenant: Tenant, within: Narrowing | None = None) -> int:
    return store.count(tenant_filter(tenant, within=within))


def delete_source(store: ChunkStore, tenant: Tenant, source_key: str, keep_hash: str | None = None) -> None:
    """Delete a source's chunks in `tenant` (a library), except those of version `keep_hash`."""
    must_not = (("content_hash", keep_hash),) if keep_hash else ()
    store.delete(tenant_filter(tenant, ("source_key", source_key), must_not=must_not))


def source_chunks(store: ChunkStore, tenant: Tenant, source_key: str, content_hash: str) -> list[dict]:
    """The whole payloads of a source's chunks of version `content_hash`, in reading order."""
    where = tenant_filter(tenant, ("source_key", source_key), ("content_hash", content_hash))
    return sorted(store.scroll(where, True), key=lambda p: p["chunk_no"])


def delete_tenant(store: ChunkStore, tenant: Tenant) -> None:
    store.delete(tenant_filter(tenant))


@dataclass(frozen=True)
class IndexedSource:
    """What the index holds of one source: the content hash of its version, and where its
    item sits (`placement`: the `PLACEMENT_FIELDS`; None for an index written before they
    existed, index version 5)."""

    content_hash: str
    placement: dict | None


def indexed_sources(store: ChunkStore, tenant: Tenant) -> dict[tuple[str, str], IndexedSource]:
    """(library id, source key) -> what is indexed of every source of `tenant`."""
    fields = [LIBRARY_FIELD, "source_key", "content_hash", *PLACEMENT_FIELDS]
    return {
        (p[LIBRARY_FIELD], p["source_key"]): IndexedSource(
            p["content_hash"],
            {f: p[f] for f in PLACEMENT_FIELDS} if all(f in p for f in PLACEMENT_FIELDS) else None,
        )
        for p in store.scroll(tenant_filter(tenant, ("chunk_no", 0)), fields)
    }


def set_placement(store: ChunkStore, tenant: Tenant, source_key: str, placement: dict) -> None:
    """Write where a source's item sits (its collections and tags, and possibly its
    `content_hash`) on every chunk of the source in `tenant` (a library), without re-embedding."""
    if tenant.library_id is None:
        raise ValueError("a source is named within its library")
    if unknown := set(placement) - {*PLACEMENT_FIELDS, "content_hash"}:
        raise ValueError(f"not placement fields: {sorted(unknown)}")
    store.set_payload(tenant_filter(tenant, ("source_key", source_key)), placement)


# --- embedded: qdrant-edge --------------------------------------------------------------------


def edge_config(q, dim: int):
    """The shard's configuration; `build_hnsw` opens the copy with the same one."""
    return q.EdgeConfig(
        vectors={DENSE: q.EdgeVectorParams(size=dim, distance=q.Distance.Cosine)},
        sparse_vectors={SPARSE: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
    )


def build_hnsw(path: str, dim: int) -> None:
    """Build the HNSW index of the shard in `path` in this process, which it stalls meanwhile
    (qdrant-edge holds the GIL): `edge_build`, the child process of `EdgeStore.optimize`."""
    import qdrant_edge as q

    shard = q.EdgeShard.load(path, edge_config(q, dim))
    shard.optimize()
    shard.flush()
    shard.close()


class EdgeStore(ChunkStore):
    """Qdrant Edge shard in `path`; one process at a time (a lock file says who has it).

    `hnsw_ef` 256: at 128 recall@10 against exact search fell to 0.86-0.94 on real MiniLM
    embeddings with many near-duplicates (tests/retrieval/test_store.py); 256 keeps it >= 0.95.

    The HNSW build (`optimize`) runs on a copy of the shard in a child process and the copy
    replaces the shard when it is done; `<path>.building` and `<path>.replaced` are its
    directories, and a crash mid-way is undone on the next open.
    """

    def __init__(self, path: Path, dim: int, hnsw_ef: int = 256):
        import qdrant_edge as q

        self.q = q
        self.dim = dim
        self.hnsw_ef = hnsw_ef
        self.path = Path(path)
        self.copy_path = self.path.with_name(f"{self.path.name}.building")
        self.replaced_path = self.path.with_name(f"{self.path.name}.replaced")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock_file = open(self.path.parent / f"{self.path.name}.lock", "w")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock_file.close()
            raise StoreError(
                f"the index at {self.path} is in use by another process (a running "
                "retrieval service?); stop it or use another data dir"
            ) from exc
        self._recover_interrupted_build()
        self.path.mkdir(exist_ok=True)
        try:
            if (self.path / "edge_config.json").exists():
                self.shard = q.EdgeShard.load(str(self.path), edge_config(q, dim))
            else:
                self.shard = q.EdgeShard.create(str(self.path), edge_config(q, dim))
            self._create_indexes()
        except Exception as exc:
            self._lock_file.close()
            raise StoreError(
                f"cannot open the index at {self.path}: {exc}. If the embedding model "
                f"changed, delete {self.path} and ingest again"
            ) from exc
        self._mutex = threading.Lock()  # one shard call at a time inside this process
        self._writes = threading.Lock()  # taken before `_mutex` by writes, and by a build while it copies
        self._generation = 0  # writes so far: a built copy replaces the shard only if none came since
        self._building = threading.Lock()  # one HNSW build at a time
        self.build_process: subprocess.Popen | None = None  # the running `edge_build` child, if any

    def _recover_interrupted_build(self) -> None:
        """Undo what a crash during `optimize` left. Between the swap's two renames the shard is
        only at `replaced_path`: it goes back. Otherwise the live shard is whole, and a copy
        (finished or not) or the shard it replaced is removed."""
        if self.replaced_path.exists() and not self.path.exists():
            log.warning(
                "the index was being replaced by its HNSW-built copy when the process stopped; "
                "the previous index is restored",
                path=str(self.replaced_path),
            )
            self.replaced_path.rename(self.path)
        for leftover in (self.copy_path, self.replaced_path):
            if leftover.exists():
                log.info("removing what an interrupted HNSW build left", path=str(leftover))
                shutil.rmtree(leftover)

    def _create_indexes(self) -> None:
        """The payload indexes this code filters on; those an older index lacks are added
        (an index written before `collection_keys` and `tags` existed gets them on open)."""
        q = self.q
        have = set(self.shard.info().payload_schema)
        if TENANT_FIELD not in have:
            self.shard.update(q.UpdateOperation.create_field_index(TENANT_FIELD, q.KeywordIndexParams(is_tenant=True)))
        for name in KEYWORD_INDEXES:
            if name not in have:
                self.shard.update(q.UpdateOperation.create_field_index(name, q.PayloadSchemaType.Keyword))
        for name in INTEGER_INDEXES:
            if name not in have:
                self.shard.update(
                    q.UpdateOperation.create_field_index(name, q.IntegerIndexParams(lookup=True, range=False))
                )

    def _filter(self, where: Conditions):
        q = self.q

        def cond(key, value):
            return q.FieldCondition(key=key, match=q.MatchValue(value))

        must = [cond(k, v) for k, v in where.must]
        must += [q.FieldCondition(key=k, match=q.MatchAny(list(values))) for k, values in where.any_of]
        return q.Filter(must=must, must_not=[cond(k, v) for k, v in where.must_not] or None)

    def upsert(self, points: list[ChunkPoint]) -> None:
        q = self.q
        batch = [
            q.Point(
                p.id,
                {SPARSE: q.SparseVector(p.sparse[0], p.sparse[1])}
                | ({} if p.dense is None else {DENSE: np.asarray(p.dense, dtype=np.float32).tolist()}),
                p.payload,
            )
            for p in points
        ]
        self._write(q.UpdateOperation.upsert_points(batch))

    def delete(self, where: Conditions) -> None:
        self._write(self.q.UpdateOperation.delete_points_by_filter(self._filter(where)))

    def set_payload(self, where: Conditions, payload: dict) -> None:
        self._write(self.q.UpdateOperation.set_payload_by_filter(self._filter(where), payload))

    def _write(self, operation) -> None:
        with self._writes, self._mutex:
            self.shard.update(operation)
            self._generation += 1

    def count(self, where: Conditions) -> int:
        with self._mutex:
            return self.shard.count(self.q.CountRequest(exact=True, filter=self._filter(where)))

    def scroll(self, where: Conditions, fields: list[str] | bool) -> Iterator[dict]:
        offset = None
        while True:
            with self._mutex:
                records, offset = self.shard.scroll(
                    self.q.ScrollRequest(offset=offset, limit=1000, filter=self._filter(where), with_payload=fields)
                )
            yield from (r.payload or {} for r in records)
            if offset is None:
                return

    def _search(self, where, dense, sparse, limit, candidates, mode):
        q = self.q
        f = self._filter(where)
        dense_params = q.SearchParams(hnsw_ef=max(self.hnsw_ef, candidates))
        # IDF over this tenant's chunks only: other users' documents must not shape the scores
        sparse_params = q.SearchParams(idf=q.IdfParams(corpus=f))
        dense_q = (
            q.Query.Nearest(np.asarray(dense, dtype=np.float32).tolist(), using=DENSE) if dense is not None else None
        )
        sparse_q = q.Query.Nearest(q.SparseVector(*sparse), using=SPARSE) if sparse is not None else None
        if mode == "dense":
            request = q.QueryRequest(limit=limit, query=dense_q, filter=f, params=dense_params, with_payload=True)
        elif mode == "lexical":
            request = q.QueryRequest(limit=limit, query=sparse_q, filter=f, params=sparse_params, with_payload=True)
        else:
            request = q.QueryRequest(
                limit=limit,
                filter=f,
                with_payload=True,
                query=q.Fusion.Dbsf(),
                prefetches=[
                    q.Prefetch(limit=candidates, query=dense_q, filter=f, params=dense_params),
                    q.Prefetch(limit=candidates, query=sparse_q, filter=f, params=sparse_params),
                ],
            )
        with self._mutex:
            points = self.shard.query(request)
        return [Hit(str(p.id), float(p.score), p.payload or {}) for p in points]

    def optimize(self) -> bool:
        """Build the HNSW index of segments past Qdrant's indexing threshold (about 10 MB of
        vectors, some 7,000 chunks), which Edge does not do in the background. True when the
        shard now has it; False when the build failed or was dropped (logged; a later call
        tries again). The live shard keeps answering searches and taking writes meanwhile.

        qdrant-edge-py 0.9 holds the GIL for the whole `EdgeShard.optimize()` (about 5 s for
        12,000 chunks, 45 s or more for 100,000), which in this process would stall every
        thread and the event loop. So the shard is copied (writes wait for the copy, searches
        do not), the copy is built by `python -m zocrates_retrieval.adapters.edge_build` while this
        thread waits without the GIL, and it replaces the shard only if no write came since the
        copy was taken: a write is never lost, a build with writes behind it is dropped."""
        if not self._building.acquire(blocking=False):
            log.info("an HNSW build is already running; this request is left to a later run")
            return False
        try:
            shutil.rmtree(self.copy_path, ignore_errors=True)
            try:
                generation = self._copy_shard()
            except OSError as exc:  # disk full, permissions: the live shard is untouched
                log.error("HNSW build skipped: cannot copy the index", path=str(self.copy_path), error=str(exc))
                return False
            if not self._build_copy():
                return False
            with self._writes, self._mutex:
                if self.shard is None:
                    return False  # closed meanwhile
                if self._generation != generation:
                    log.info(
                        "HNSW build dropped: writes came while it ran; a later run builds again",
                        writes=self._generation - generation,
                    )
                    return False
                return self._swap_in_copy()
        finally:  # outside the locks: removing a big index takes a while
            shutil.rmtree(self.copy_path, ignore_errors=True)
            shutil.rmtree(self.replaced_path, ignore_errors=True)
            self._building.release()

    def _copy_shard(self) -> int:
        """Copy the flushed shard to `copy_path`; returns the write generation it holds."""
        with self._writes:
            with self._mutex:
                self.shard.flush()
                generation = self._generation
            # searches only read the files, so they go on while these are copied
            shutil.copytree(self.path, self.copy_path)
        return generation

    def _build_copy(self) -> bool:
        child = subprocess.Popen(
            [sys.executable, "-m", "zocrates_retrieval.adapters.edge_build", str(self.copy_path), str(self.dim)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.build_process = child
        try:
            _, err = child.communicate()  # waits without the GIL
        finally:
            self.build_process = None
        if child.returncode != 0 and self.shard is None:
            return False  # killed by close()
        if child.returncode != 0:
            detail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            # the exit status in the event too: "exit status -9" says at a glance it was killed
            log.error(
                f"HNSW build failed (exit status {child.returncode}); the index is kept as it was",
                exit_status=child.returncode,
                error=detail[0],
            )
            return False
        return True

    def _swap_in_copy(self) -> bool:
        """Replace the shard by its built copy; the caller holds both locks."""
        q = self.q
        self.shard.close()
        self.shard = None
        # a crash between these renames is undone by `_recover_interrupted_build`
        self.path.rename(self.replaced_path)
        self.copy_path.rename(self.path)
        fsync_dir(self.path.parent)
        try:
            self.shard = q.EdgeShard.load(str(self.path), edge_config(q, self.dim))
        except Exception:
            log.exception("the HNSW-built copy of the index cannot be opened; the index is kept as it was")
            self.path.rename(self.copy_path)
            self.replaced_path.rename(self.path)
            fsync_dir(self.path.parent)
            self.shard = q.EdgeShard.load(str(self.path), edge_config(q, self.dim))
            return False
        return True

    def close(self) -> None:
        if (child := self.build_process) is not None:
            child.kill()  # its copy is removed by the waiting `optimize`, or at the next open
        if getattr(self, "shard", None) is not None:
            with self._mutex:
                self.shard.flush()
                self.shard.close()
            self.shard = None
        self._lock_file.close()


# --- server: qdrant-client --------------------------------------------------------------------


class ServerStore(ChunkStore):
    """A collection on a Qdrant server (or `QdrantClient(":memory:")` in tests)."""

    def __init__(self, client, collection: str, dim: int, hnsw_ef: int = 256):
        from qdrant_client import models

        self.m = models
        self.client = client
        self.collection = collection
        self.dim = dim
        self.hnsw_ef = hnsw_ef
        try:
            exists = client.collection_exists(collection)
            if not exists:
                client.create_collection(
                    collection,
                    vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
                    sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                )
                self._create_indexes()
            else:
                info = client.get_collection(collection)
                have = info.config.params.vectors[DENSE].size
                if have != dim:
                    raise StoreError(
                        f"collection {collection!r} holds {have}-dimensional vectors, the "
                        f"embedding model makes {dim}; use another collection name"
                    )
                self._create_indexes(set(info.payload_schema or {}))
        except StoreError:
            raise
        except Exception as exc:
            raise StoreError(f"cannot reach the Qdrant collection {collection!r}: {exc}") from exc

    @classmethod
    def connect(cls, url: str, api_key: str | None, collection: str, dim: int) -> ServerStore:
        from qdrant_client import QdrantClient

        return cls(QdrantClient(url=url, api_key=api_key, timeout=10), collection, dim)

    def _create_indexes(self, have: set[str] = frozenset()) -> None:
        """The payload indexes this code filters on, but those in `have` already."""
        m = self.m
        import warnings

        with warnings.catch_warnings():  # local mode says payload indexes have no effect there
            warnings.simplefilter("ignore")
            if TENANT_FIELD not in have:
                self.client.create_payload_index(
                    self.collection,
                    TENANT_FIELD,
                    m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True),
                )
            for name in KEYWORD_INDEXES:
                if name not in have:
                    self.client.create_payload_index(self.collection, name, m.PayloadSchemaType.KEYWORD)
            for name in INTEGER_INDEXES:
                if name in have:
                    continue
                self.client.create_payload_index(
                    self.collection,
                    name,
                    m.IntegerIndexParams(type=m.IntegerIndexType.INTEGER, lookup=True, range=False),
                )

    def _filter(self, where: Conditions):
        m = self.m

        def cond(key, value):
            return m.FieldCondition(key=key, match=m.MatchValue(value=value))

        must = [cond(k, v) for k, v in where.must]
        must += [m.FieldCondition(key=k, match=m.MatchAny(any=list(values))) for k, values in where.any_of]
        return m.Filter(must=must, must_not=[cond(k, v) for k, v in where.must_not] or None)

    def upsert(self, points: list[ChunkPoint]) -> None:
        m = self.m
        self.client.upsert(
            self.collection,
            [
                m.PointStruct(
                    id=p.id,
                    payload=p.payload,
                    vector={SPARSE: m.SparseVector(indices=p.sparse[0], values=p.sparse[1])}
                    | ({} if p.dense is None else {DENSE: np.asarray(p.dense, dtype=np.float32).tolist()}),
                )
                for p in points
            ],
            wait=True,
        )

    def delete(self, where: Conditions) -> None:
        self.client.delete(
            self.collection, points_selector=self.m.FilterSelector(filter=self._filter(where)), wait=True
        )

    def set_payload(self, where: Conditions, payload: dict) -> None:
        self.client.set_payload(
            self.collection, payload, points=self.m.FilterSelector(filter=self._filter(where)), wait=True
        )

    def count(self, where: Conditions) -> int:
        return self.client.count(self.collection, count_filter=self._filter(where), exact=True).count

    def scroll(self, where: Conditions, fields: list[str] | bool) -> Iterator[dict]:
        offset = None
        while True:
            records, offset = self.client.scroll(
                self.collection,
                scroll_filter=self._filter(where),
                limit=1000,
                offset=offset,
                with_payload=fields,
                with_vectors=False,
            )
            yield from (r.payload or {} for r in records)
            if offset is None:
                return

    def _search(self, where, dense, sparse, limit, candidates, mode):
        m = self.m
        f = self._filter(where)
        dense_params = m.SearchParams(hnsw_ef=max(self.hnsw_ef, candidates))
        sparse_params = m.SearchParams(idf=m.IdfCorpusParams(corpus=f))
        dense_q = np.asarray(dense, dtype=np.float32).tolist() if dense is not None else None
        sparse_q = m.SparseVector(indices=sparse[0], values=sparse[1]) if sparse is not None else None
        if mode == "dense":
            kwargs = {"query": dense_q, "using": DENSE, "search_params": dense_params}
        elif mode == "lexical":
            kwargs = {"query": sparse_q, "using": SPARSE, "search_params": sparse_params}
        else:
            kwargs = {
                "query": m.FusionQuery(fusion=m.Fusion.DBSF),
                "prefetch": [
                    m.Prefetch(query=dense_q, using=DENSE, limit=candidates, filter=f, params=dense_params),
                    m.Prefetch(query=sparse_q, using=SPARSE, limit=candidates, filter=f, params=sparse_params),
                ],
            }
        result = self.client.query_points(self.collection, query_filter=f, limit=limit, with_payload=True, **kwargs)
        return [Hit(str(p.id), float(p.score), p.payload or {}) for p in result.points]

    def close(self) -> None:
        self.client.close()
