"""Items cited in a user's recent answers have their files converted early: retrieval reads each
`TurnResolved` off the bus, keeps the user's recently cited items in the catalog (per user,
bounded, kept across restarts), and an indexing run converts their files right after the
recently changed ones. One user's citations never reorder another's indexing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from harness.waiting import wait_until
from harness.zotero import ZoteroLibraryBuilder
from zocrates_contracts import TurnResolved
from zocrates_contracts.turns import References, SourceRef, TurnRecord
from zocrates_retrieval.adapters.store import EdgeStore
from zocrates_retrieval.app import create_app
from zocrates_retrieval.config import RetrievalSettings
from zocrates_retrieval.domain.priority import MAX_CITED
from zocrates_retrieval.ingest import LEXICAL, Ingestor
from zocrates_retrieval.service import RetrievalService
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings


def build(tmp_path, schema_dir, make) -> tuple[ZoteroLibraryBuilder, dict[str, str], dict[str, str]]:
    """A library of four items with a PDF each: one changed yesterday, three changed years ago
    (`a` the oldest). Returns the builder, item keys and file keys by name."""
    b = ZoteroLibraryBuilder(tmp_path / "zotero", schema_dir)
    items, files = {}, {}
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    for name, modified in (("a", "2020-01-01 00:00:00"), ("b", "2021-01-01 00:00:00"), ("c", "2022-01-01 00:00:00")):
        item, items[name] = b.add_item("journalArticle", {"title": f"Paper {name}"})
        _, files[name] = b.add_attachment(item, f"{name}.pdf", make.text_pdf([("Results", [f"Findings of {name}."])]))
        b.con.execute("UPDATE items SET dateModified=? WHERE key=?", (modified, items[name]))
    item, items["recent"] = b.add_item("journalArticle", {"title": "Paper added yesterday"})
    _, files["recent"] = b.add_attachment(item, "recent.pdf", make.text_pdf([("Results", ["New findings."])]))
    b.con.execute("UPDATE items SET dateModified=? WHERE key=?", (yesterday, items["recent"]))
    b.con.commit()
    return b, items, files


def recording(store, embedded: list[str] | None = None) -> list[str]:
    """The source keys `store` is written, in the order of their first write (by their words,
    then embedded); those written embedded, in order, into `embedded` when given."""
    order: list[str] = []
    upsert = store.upsert

    def recording_upsert(points):
        for p in points:
            if p.payload["source_key"] not in order:
                order.append(p.payload["source_key"])
            lexical = p.payload["content_hash"].startswith(LEXICAL)
            if embedded is not None and not lexical and p.payload["source_key"] not in embedded:
                embedded.append(p.payload["source_key"])
        return upsert(points)

    store.upsert = recording_upsert
    return order


def test_a_cited_items_file_is_converted_before_older_uncited_ones(tmp_path, schema_dir, make, embedder):
    b, items, files = build(tmp_path, schema_dir, make)
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    order = recording(store)
    try:
        progress = Ingestor(store, embedder).ingest_zotero(b.dir, "u1", cited=[("user", items["a"])])
        assert progress.state == "done" and progress.indexed == 4
        # recent first, then the cited one (the oldest), then the rest newest first
        assert order == [files["recent"], files["a"], files["c"], files["b"]]
    finally:
        store.close()


def test_an_item_cited_while_a_run_converts_files_has_its_waiting_file_converted_next(
    tmp_path, schema_dir, make, embedder, monkeypatch
):
    from zocrates_retrieval import ingest

    monkeypatch.setattr(ingest, "FETCH_BATCH", 1)  # a look at what was cited before each file
    b, items, files = build(tmp_path, schema_dir, make)
    b.close()
    store = EdgeStore(tmp_path / "edge", embedder.dim)
    embedded: list[str] = []
    order = recording(store, embedded)
    ingestor = Ingestor(store, embedder)

    def on_progress(progress):
        if progress.files_searchable == 1:  # the recent file is read: an answer cites the oldest one
            ingestor.cited("u2", [("user", items["c"])])  # another user's answer: not this run's
            ingestor.cited("u1", [("user", items["a"])])

    try:
        progress = ingestor.ingest_zotero(b.dir, "u1", on_progress=on_progress)
        assert progress.state == "done" and progress.indexed == 4 and progress.files_searchable == 4
        # read by its words next, and embedded in the same order
        assert order == embedded == [files["recent"], files["a"], files["c"], files["b"]]
    finally:
        store.close()
    ingestor.cited("u1", [("user", items["b"])])  # no run going: left to the next run's list
    assert ingestor._cited_now == {}


def resolved(user: str, *cited: str, turn: str = "t1") -> TurnResolved:
    record = TurnRecord(
        turn_id=turn,
        session_id="s1",
        intent="library",
        question="What did they find?",
        references=References(cited=[SourceRef(item_key=key) for key in cited]),
    )
    return TurnResolved(turn_id=turn, session_id="s1", user_id=user, record=record)


@pytest.mark.connected
async def test_cited_items_are_kept_per_user_bounded_and_across_a_restart_and_order_only_that_users_run(
    nats_server, tmp_path, schema_dir, make, no_home_zotero
):
    b, items, files = build(tmp_path, schema_dir, make)
    b.close()
    settings = ZocratesSettings(nats_url=nats_server.url)
    gateway = bus.make_broker(settings)
    await gateway.start()
    await bus.ensure_streams(gateway)

    async def cited_of(service: RetrievalService, user: str) -> list[tuple[str, str]]:
        return await service.catalog.recently_cited(user)

    # A replica without a local library notes what answers cited.
    first = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=tmp_path / "d1", embedding_device="cpu"))
    app = create_app(settings, service=first)
    await app.start()
    try:
        await bus.publish(gateway, resolved("local", items["c"], items["b"], items["c"], turn="t1"))
        await bus.publish(gateway, resolved("local", items["b"], turn="t2"))
        await bus.publish(gateway, resolved("mallory", items["a"], turn="t3"))
        await bus.publish(gateway, resolved("local", turn="t4"))  # cited nothing: nothing changes
        await wait_until(
            lambda: _is(cited_of(first, "local"), [("user", items["b"]), ("user", items["c"])]),
            what="local's two answers noted, the latest first",
        )
        await wait_until(lambda: _is(cited_of(first, "mallory"), [("user", items["a"])]), what="mallory's answer")
        many = [f"K{n:07d}" for n in range(MAX_CITED + 20)]
        await bus.publish(gateway, resolved("bounded", *many, turn="t5"))
        await wait_until(lambda: cited_of(first, "bounded"), what="a long answer noted")
        kept = await cited_of(first, "bounded")
        assert len(kept) == MAX_CITED and kept[0] == ("user", "K0000000")
    finally:
        await app.stop()

    # A restarted service reads them back, and its first run of the local library converts the
    # file local cited right after the recent one; mallory's citation reorders nothing of it.
    second = RetrievalService(
        RetrievalSettings(zotero_dir=b.dir, data_dir=tmp_path / "d2", embedding_device="cpu", rescan_interval_s=0)
    )
    app = create_app(settings, service=second)
    written: list[list[str]] = []
    start = second.start

    async def start_recording() -> None:
        await start()  # opens the index and starts the first run, which has not run yet
        written.append(recording(second.store))

    second.start = start_recording
    await app.start()
    try:
        await second._ingest_task
    finally:
        await app.stop()
        await gateway.stop()
    # recent first, then local's latest citation and its earlier one; `a`, cited by mallory
    # only, comes last among the rest (the oldest)
    assert written[0] == [files["recent"], files["b"], files["c"], files["a"]]


async def _is(value, expected) -> bool:
    return await value == expected
