"""The staged-file stores: tenancy, expiry, digest verified on read, atomic replacement.

Every behaviour runs against both adapters; the NATS one against a real nats-server.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from datetime import UTC, datetime, timedelta

import nats
import pytest
from staging.loopback import SMALL_PDF
from staging.support import leftovers

from zocrates_runtime.staged_store import (
    DEFAULT_BUCKET,
    FileStagedStore,
    NatsStagedStore,
    StagedIntegrityError,
)

META = {"candidate_id": "c1", "filename": "paper.pdf"}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def nc(nats_server):
    conn = await nats.connect(nats_server.url)
    yield conn
    await conn.drain()


@pytest.fixture(params=["file", pytest.param("nats", marks=pytest.mark.connected)])
async def store(request, tmp_path, clock):
    if request.param == "file":
        yield FileStagedStore(tmp_path / "staged", ttl=timedelta(hours=1), clock=clock)
    else:
        conn = await nats.connect(request.getfixturevalue("nats_server").url)
        yield NatsStagedStore(conn.jetstream(), ttl=timedelta(hours=1), clock=clock)
        await conn.drain()


@pytest.fixture
def pdf_file(tmp_path):
    path = tmp_path / "download.part"
    path.write_bytes(SMALL_PDF)
    return path


async def test_put_then_get_returns_the_bytes_and_digest(store, pdf_file):
    info = await store.put("alice", "s1", pdf_file, META)
    assert info.sha256 == hashlib.sha256(SMALL_PDF).hexdigest()
    assert info.size == len(SMALL_PDF) and info.user_id == "alice"
    got = await store.get("alice", "s1")
    assert got is not None and got.data == SMALL_PDF
    assert got.info.meta == META and got.info.sha256 == info.sha256
    assert pdf_file.exists()  # put copies; the caller's file is left to the caller


async def test_another_users_id_reads_as_absent(store, pdf_file):
    """S-AUTH tenancy at the store: the gateway answers 404 for None, whatever the cause."""
    await store.put("alice", "s1", pdf_file, META)
    assert await store.info("mallory", "s1") is None
    assert await store.get("mallory", "s1") is None
    assert await store.read_into("mallory", "s1", io.BytesIO()) is None
    assert await store.delete("mallory", "s1") is False
    assert await store.get("alice", "s1") is not None  # untouched by the attempts
    assert await store.get("alice", "nope") is None


@pytest.mark.parametrize(
    ("user_id", "staged_id"),
    [
        ("alice", "../alice/s1"),
        ("..", "s1"),
        ("alice", "s1/../../x"),
        ("", "s1"),
        ("alice", ""),
        ("alice", "s1.json"),
        ("alice", "*"),
        ("alice", ">"),
    ],
)
async def test_malformed_ids_read_as_absent(store, pdf_file, user_id, staged_id):
    await store.put("alice", "s1", pdf_file, META)
    assert await store.get(user_id, staged_id) is None


@pytest.mark.connected
async def test_a_staged_id_is_not_taken_over_by_another_user(pdf_file, nc):
    store = NatsStagedStore(nc.jetstream())
    await store.put("alice", "s1", pdf_file, META)
    with pytest.raises(PermissionError):
        await store.put("mallory", "s1", pdf_file, META)
    assert (await store.get("alice", "s1")).info.user_id == "alice"


async def test_expired_files_read_as_absent_and_are_removed(store, pdf_file, clock):
    await store.put("alice", "old", pdf_file, META)
    clock.now += timedelta(minutes=30)
    await store.put("alice", "new", pdf_file, META)
    clock.now += timedelta(minutes=31)
    assert await store.get("alice", "old") is None
    assert await store.get("alice", "new") is not None
    assert await store.expire() == 1
    clock.now += timedelta(hours=1)
    assert await store.expire() == 1
    assert await store.expire() == 0


async def test_a_second_put_replaces_the_first(store, pdf_file, tmp_path):
    await store.put("alice", "s1", pdf_file, META)
    other = tmp_path / "other.part"
    other.write_bytes(SMALL_PDF + b"% v2\n")
    await store.put("alice", "s1", other, META)
    assert (await store.get("alice", "s1")).data == SMALL_PDF + b"% v2\n"
    if isinstance(store, FileStagedStore):  # the old bytes are gone, no temp files remain
        assert sorted(p.suffix for p in leftovers(store.root)) == [".json", ".pdf"]


async def test_file_store_verifies_the_digest_on_read(tmp_path, pdf_file):
    store = FileStagedStore(tmp_path / "staged")
    await store.put("alice", "s1", pdf_file, META)
    (data,) = (tmp_path / "staged" / "alice").glob("*.pdf")
    data.write_bytes(SMALL_PDF.replace(b"Hello", b"Hellp"))
    with pytest.raises(StagedIntegrityError, match="SHA-256"):
        await store.get("alice", "s1")


@pytest.mark.connected
async def test_nats_store_verifies_the_digest_on_read(nc, pdf_file):
    """Rewrite the object's meta record with another digest: the read must refuse the bytes."""
    js = nc.jetstream()
    store = NatsStagedStore(js)
    await store.put("alice", "s1", pdf_file, META)
    name = base64.urlsafe_b64encode(b"s1").decode()
    subject = f"$O.{DEFAULT_BUCKET}.M.{name}"
    record = json.loads((await js.get_last_msg(f"OBJ_{DEFAULT_BUCKET}", subject)).data)
    wrong = base64.urlsafe_b64encode(hashlib.sha256(b"something else").digest()).decode()
    record["digest"] = f"SHA-256={wrong}"
    await js.publish(subject, json.dumps(record).encode(), headers={"Nats-Rollup": "sub"})
    with pytest.raises(StagedIntegrityError, match="SHA-256"):
        await store.get("alice", "s1")


@pytest.mark.connected
async def test_nats_store_refuses_an_object_with_a_missing_chunk(nc, tmp_path):
    js = nc.jetstream()
    store = NatsStagedStore(js)
    big = tmp_path / "big.part"
    big.write_bytes(SMALL_PDF + b"%" * (400 * 1024))  # four 128 KB chunks
    await store.put("alice", "s1", big, META)
    obj = await js.object_store(DEFAULT_BUCKET)
    nuid = (await obj.get_info("s1")).nuid
    first = await js.get_msg(f"OBJ_{DEFAULT_BUCKET}", seq=1, subject=f"$O.{DEFAULT_BUCKET}.C.{nuid}", next=True)
    await js.delete_msg(f"OBJ_{DEFAULT_BUCKET}", first.seq)
    with pytest.raises(StagedIntegrityError, match="do not match"):
        await store.get("alice", "s1")


@pytest.mark.connected
async def test_nats_bucket_is_created_once_and_shared_with_readers(nc, pdf_file):
    js = nc.jetstream()
    writer = NatsStagedStore(js, ttl=timedelta(hours=6))
    await writer.put("alice", "s1", pdf_file, META)
    again = NatsStagedStore(js, ttl=timedelta(hours=6))  # a second replica: no error
    assert (await again.get("alice", "s1")).data == SMALL_PDF
    reader = NatsStagedStore(js)  # the gateway: binds, keeps the writer's TTL
    assert (await reader.get("alice", "s1")).data == SMALL_PDF
    assert (await js.stream_info(f"OBJ_{DEFAULT_BUCKET}")).config.max_age == 6 * 3600
    shorter = NatsStagedStore(js, ttl=timedelta(hours=2))  # a changed setting is applied
    await shorter.info("alice", "s1")
    assert (await js.stream_info(f"OBJ_{DEFAULT_BUCKET}")).config.max_age == 2 * 3600


def test_the_store_module_imports_on_its_own():
    """The gateway imports the store without the service (or httpx) behind it."""
    import subprocess
    import sys

    code = (
        "import sys, zocrates_runtime.staged_store; "
        "bad = [m for m in ('zocrates_staging.service', 'httpx', 'zocrates_staging.adapters.download')"
        " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
