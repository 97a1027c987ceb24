"""StagingService end to end: a batch in, one record per candidate out, files owned and stored."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import nats
import pytest
from staging.loopback import SMALL_PDF, bomb_pdf, drip, hang_up, redirect, respond
from staging.support import batch, leftovers

from zocrates_contracts import BatchStaged
from zocrates_runtime.staged_store import FileStagedStore, NatsStagedStore
from zocrates_staging.config import StagingSettings
from zocrates_staging.domain.files import staged_id_for
from zocrates_staging.service import StagingService


def by_id(reply: BatchStaged) -> dict:
    return {f.candidate_id: f for f in reply.files}


async def test_a_mixed_batch_gets_one_record_per_candidate(service, server, file_store, work_dir):
    server.routes["/good.pdf"] = respond(SMALL_PDF)
    server.routes["/page.pdf"] = respond(b"<html>captcha</html>")
    server.routes["/cut.pdf"] = hang_up(b"%PDF-1.7\n" + b"\0" * 5000, content_length=50_000)
    server.routes["/to-private"] = redirect("http://192.168.1.1/x.pdf")
    request = batch(
        server.url("/good.pdf"),
        None,
        server.url("/page.pdf"),
        server.url("/good.pdf"),
        "http://169.254.169.254/latest/meta-data/",
        server.url("/cut.pdf"),
        server.url("/to-private"),
        server.url("/missing.pdf"),
    )
    reply = await service.stage(request)

    assert reply.batch_id == "b1" and reply.error is None
    assert (reply.user_id, reply.turn_id, reply.session_id) == ("alice", "t1", "s1")
    assert [f.candidate_id for f in reply.files] == [f"c{i}" for i in range(8)]
    files = by_id(reply)
    sha = hashlib.sha256(SMALL_PDF).hexdigest()
    assert files["c0"].status == "staged" and files["c0"].sha256 == sha
    assert files["c0"].size == len(SMALL_PDF)
    assert files["c0"].object_name == staged_id_for("alice", "b1", "c0")
    assert files["c1"].status == "no_pdf" and files["c1"].reason
    assert files["c2"].status == "failed" and "HTML" in files["c2"].reason
    assert files["c3"].status == "duplicate" and files["c3"].object_name == files["c0"].object_name
    assert "c0" in files["c3"].reason
    assert files["c4"].status == "failed" and "link-local" in files["c4"].reason
    assert files["c5"].status == "failed" and "mid-download" in files["c5"].reason
    assert files["c6"].status == "failed" and "RFC 1918" in files["c6"].reason
    assert files["c7"].status == "failed" and "HTTP 404" in files["c7"].reason

    assert server.hits("/good.pdf") == 1  # the duplicate URL was fetched once
    staged = await file_store.get("alice", files["c0"].object_name)
    assert staged.data == SMALL_PDF and staged.info.meta["candidate_id"] == "c0"
    assert await file_store.get("bob", files["c0"].object_name) is None
    assert leftovers(work_dir) == []  # no download left behind, staged or refused
    assert service.health()["files"] == {"staged": 1, "no_pdf": 1, "failed": 5, "duplicate": 1}


async def test_a_redelivered_batch_overwrites_instead_of_duplicating(service, server, file_store):
    server.routes["/good.pdf"] = respond(SMALL_PDF)
    first = await service.stage(batch(server.url("/good.pdf")))
    second = await service.stage(batch(server.url("/good.pdf")))
    assert first.files == second.files
    assert len(list((file_store.root / "alice").glob("*.pdf"))) == 1


async def test_a_bomb_pdf_fails_its_candidate_and_the_service_goes_on(settings, file_store, server, work_dir):
    service = StagingService(settings.model_copy(update={"check_max_inflated_mb": 50}), file_store)
    await service.start()
    try:
        server.routes["/bomb.pdf"] = respond(bomb_pdf(120))
        server.routes["/good.pdf"] = respond(SMALL_PDF)
        reply = await service.stage(batch(server.url("/bomb.pdf"), server.url("/good.pdf")))
    finally:
        await service.close()
    files = by_id(reply)
    assert files["c0"].status == "failed" and "bomb" in files["c0"].reason
    assert files["c1"].status == "staged"
    assert leftovers(work_dir) == []


async def test_slow_servers_do_not_hold_up_the_batch_past_the_deadline(settings, file_store, server):
    service = StagingService(settings.model_copy(update={"total_timeout_s": 1.0}), file_store)
    await service.start()
    try:
        for i in range(3):
            server.routes[f"/drip{i}.pdf"] = drip(b"%PDF-1.7\n", delay=0.1)
        reply = await service.stage(batch(*(server.url(f"/drip{i}.pdf") for i in range(3))))
    finally:
        await service.close()
    assert all(f.status == "failed" and "deadline" in f.reason for f in reply.files)


async def test_the_default_settings_block_loopback(server, file_store, work_dir):
    """Without the test-only allowlist, the very server the other tests use is out of reach."""
    server.routes["/good.pdf"] = respond(SMALL_PDF)
    settings = StagingSettings(allowed_ports=[80, 443, server.port], work_dir=work_dir)
    service = StagingService(settings, file_store)
    await service.start()
    try:
        reply = await service.stage(batch(server.url("/good.pdf")))
    finally:
        await service.close()
    assert reply.files[0].status == "failed" and "loopback" in reply.files[0].reason
    assert server.connections == 0


def test_the_allowlist_accepts_loopback_addresses_only():
    with pytest.raises(ValueError, match="loopback"):
        StagingSettings(unsafe_allow_addresses=["169.254.169.254"])
    with pytest.raises(ValueError, match="loopback"):
        StagingSettings(unsafe_allow_addresses=["10.0.0.1"])


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("ZOCRATES_STAGING_MAX_BYTES", "2048")
    monkeypatch.setenv("ZOCRATES_STAGING_ALLOWED_PORTS", "[443]")
    monkeypatch.setenv("ZOCRATES_STAGING_EXPIRE_AFTER", "PT6H")
    settings = StagingSettings()
    assert settings.max_bytes == 2048 and settings.allowed_ports == [443]
    assert settings.expire_after == timedelta(hours=6)


async def test_stage_before_start_is_a_clear_error(settings, file_store):
    with pytest.raises(RuntimeError, match="start"):
        await StagingService(settings, file_store).stage(batch("http://example.org/x.pdf"))


async def test_start_clears_stale_downloads_and_close_is_idempotent(settings, file_store, work_dir):
    import os

    work_dir.mkdir(parents=True)
    stale = work_dir / ".download-crashed.part"
    stale.write_bytes(b"%PDF-partial")
    os.utime(stale, (0, 0))
    service = StagingService(settings, file_store)
    assert service.health()["status"] == "starting"
    await service.start()
    assert not stale.exists() and service.health()["status"] == "ok"
    await service.close()
    await service.close()


@pytest.mark.connected
async def test_staged_files_land_in_the_nats_bucket(settings, server, nats_server):
    nc = await nats.connect(nats_server.url)
    try:
        store = NatsStagedStore(nc.jetstream(), ttl=settings.expire_after)
        service = StagingService(settings, store)
        await service.start()
        server.routes["/good.pdf"] = respond(SMALL_PDF)
        reply = await service.stage(batch(server.url("/good.pdf"), user_id="alice"))
        await service.close()
        name = reply.files[0].object_name
        gateway_view = NatsStagedStore(nc.jetstream())  # as the gateway builds it
        assert (await gateway_view.get("alice", name)).data == SMALL_PDF
        assert await gateway_view.get("bob", name) is None
    finally:
        await nc.drain()


async def test_a_checker_that_cannot_run_fails_the_start(settings, file_store):
    """Better no service than one that quietly fails every PDF."""
    service = StagingService(settings.model_copy(update={"check_memory_mb": 24}), file_store)
    with pytest.raises(RuntimeError, match="fails on a valid PDF"):
        await service.start()
    await service.close()


async def test_a_failing_store_raises_for_the_bus_to_retry_and_leaves_nothing(settings, server, file_store, work_dir):
    """The one error `stage` does not turn into a record: the bus naks and redelivers."""

    class DownStore(FileStagedStore):
        async def put(self, *args, **kwargs):
            raise ConnectionError("object store unreachable")

    service = StagingService(settings, DownStore(file_store.root))
    await service.start()
    server.routes["/good.pdf"] = respond(SMALL_PDF)
    try:
        with pytest.raises(ConnectionError, match="unreachable"):
            await service.stage(batch(server.url("/good.pdf"), server.url("/good.pdf?v=2")))
    finally:
        await service.close()
    assert leftovers(work_dir) == []
    assert service.health()["batches_in_flight"] == 0
