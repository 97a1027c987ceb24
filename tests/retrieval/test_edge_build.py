"""The embedded index's HNSW build runs on a copy in a child process (`EdgeStore.optimize`):
the live shard keeps answering meanwhile, a write during the build is never lost, a failed
build leaves the live shard as it was, and a crash mid-way is undone at the next open.

The child is held with SIGSTOP where a test needs it to be still running, so nothing here
depends on timing."""

from __future__ import annotations

import logging
import os
import resource
import shutil
import signal
import threading
import time

import numpy as np
import pytest

from zocrates_retrieval.adapters.store import (
    ChunkPoint,
    EdgeStore,
    SparseEncoder,
    Tenant,
    count_chunks,
    delete_source,
    point_id,
    query_chunks,
)

DIM = 8
SPARSE = SparseEncoder()
WORDS = ["graphene", "protein", "coffee", "heparin", "glacier", "neutrino", "sonnet", "vaccine"]
ANN = Tenant("ann")


def vec(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def point(source: str, no: int, text: str, seed: int) -> ChunkPoint:
    return ChunkPoint(
        point_id("ann", "user", source, no),
        vec(seed),
        SPARSE.document(text),
        {
            "user_id": "ann",
            "library_id": "user",
            "source_key": source,
            "chunk_no": no,
            "text": text,
            "content_hash": "h1",
            "item_key": f"I{source}",
        },
    )


def filled_store(path) -> EdgeStore:
    store = EdgeStore(path, DIM)
    store.upsert([point(f"S{n % 7}", n, f"{WORDS[n % 8]} study number {n}", seed=n) for n in range(300)])
    return store


def answers(store: EdgeStore) -> list:
    """What a few searches of every mode return: the hits scored above the last one, the last
    score and the number of hits (hits of equal score come in any order, so only these are fixed)."""
    out = []
    for seed, word in enumerate(WORDS[:4]):
        for mode in ("dense", "lexical", "hybrid"):
            hits = query_chunks(store, ANN, dense=vec(1000 + seed), sparse=SPARSE.query(word), limit=10, mode=mode)
            scored = [(h.id, round(h.score, 5)) for h in hits]
            last = min(score for _, score in scored)
            out.append((sorted(hit for hit in scored if hit[1] > last), last, len(scored)))
    return out


def start_held_build(store: EdgeStore):
    """Start `optimize()` in a thread and stop its child once it runs: (thread, result, child)."""
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(store.optimize()))
    thread.start()
    deadline = time.monotonic() + 60
    while (child := store.build_process) is None:
        assert thread.is_alive(), "optimize() ended without starting a build"
        assert time.monotonic() < deadline, "the build never started"
        time.sleep(0.001)
    os.kill(child.pid, signal.SIGSTOP)
    return thread, result, child


def release(thread: threading.Thread, child) -> None:
    os.kill(child.pid, signal.SIGCONT)
    thread.join(120)
    assert not thread.is_alive()


def test_searches_are_answered_while_the_build_runs_and_the_swap_keeps_the_results(tmp_path):
    store = filled_store(tmp_path / "edge")
    before = answers(store)
    live_dir = os.stat(store.path).st_ino
    thread, result, child = start_held_build(store)

    during = answers(store)
    assert child.poll() is None, "the searches were answered only after the build ended"
    assert during == before
    assert store.optimize() is False  # one build at a time; the second one is left for later
    release(thread, child)

    assert result == [True]
    assert os.stat(store.path).st_ino != live_dir  # the built copy is now the index
    assert answers(store) == before and count_chunks(store, ANN) == 300
    assert not store.copy_path.exists() and not store.replaced_path.exists()
    store.close()
    reopened = EdgeStore(tmp_path / "edge", DIM)
    assert answers(reopened) == before
    reopened.close()


def test_a_write_during_the_build_is_kept_and_the_build_dropped(tmp_path, caplog):
    store = filled_store(tmp_path / "edge")
    live_dir = os.stat(store.path).st_ino
    thread, result, child = start_held_build(store)

    store.upsert([point("NEW", 0, "a late chunk about quasars", seed=99)])
    delete_source(store, ANN, "S3")
    assert child.poll() is None  # both writes went in while the build still ran
    with caplog.at_level(logging.INFO, "zocrates_retrieval.adapters.store"):
        release(thread, child)

    assert result == [False]
    assert "HNSW build dropped" in caplog.text
    assert os.stat(store.path).st_ino == live_dir and not store.copy_path.exists()

    def check() -> None:
        hits = query_chunks(store, ANN, dense=None, sparse=SPARSE.query("quasars"), limit=5, mode="lexical")
        assert [h.payload["source_key"] for h in hits] == ["NEW"]
        assert count_chunks(store, Tenant("ann")) == 300 - len(range(3, 300, 7)) + 1

    check()
    assert store.optimize() is True  # a later build, with no write behind it, goes through
    check()
    store.close()
    store = EdgeStore(tmp_path / "edge", DIM)
    check()
    store.close()


def test_a_killed_build_leaves_the_live_index_as_it_was(tmp_path, caplog):
    store = filled_store(tmp_path / "edge")
    before = answers(store)
    thread, result, child = start_held_build(store)
    with caplog.at_level(logging.ERROR, "zocrates_retrieval.adapters.store"):
        os.kill(child.pid, signal.SIGKILL)
        release(thread, child)

    assert result == [False]
    assert "HNSW build failed (exit status -9" in caplog.text
    assert answers(store) == before and not store.copy_path.exists()
    store.upsert([point("NEW", 0, "still writable", seed=5)])
    assert count_chunks(store, ANN) == 301
    store.close()


def test_a_copy_that_cannot_be_written_leaves_the_live_index_as_it_was(tmp_path, caplog):
    """The copy fails as on a full disk: here the file size limit (RLIMIT_FSIZE) is below the
    size of the shard's 32 MiB write-ahead log, so copying it fails with EFBIG."""
    store = filled_store(tmp_path / "edge")
    before = answers(store)
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an error, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, limits[1]))
    try:
        with caplog.at_level(logging.ERROR, "zocrates_retrieval.adapters.store"):
            assert store.optimize() is False
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, old_handler)
    assert "HNSW build skipped: cannot copy the index" in caplog.text
    assert answers(store) == before and not store.copy_path.exists()
    assert store.optimize() is True
    store.close()


@pytest.mark.parametrize("crash", ["while building", "between the renames", "before removing the old index"])
def test_leftovers_of_a_crash_mid_build_are_undone_at_open(tmp_path, crash):
    store = filled_store(tmp_path / "edge")
    before = answers(store)
    live, copy, replaced = store.path, store.copy_path, store.replaced_path
    store.close()
    if crash == "while building":  # an unfinished copy next to the live index
        shutil.copytree(live, copy)
        (copy / "segments" / "half-written").write_bytes(b"\0" * 100)
    elif crash == "between the renames":  # the index only at `replaced`, the built copy waiting
        shutil.copytree(live, copy)
        live.rename(replaced)
    else:  # the swap done, the old index not yet removed
        shutil.copytree(live, replaced)

    store = EdgeStore(tmp_path / "edge", DIM)
    assert answers(store) == before
    assert not copy.exists() and not replaced.exists()
    store.close()
