"""The plugin's hosted library sync against the real stack (issue 7).

Real nats-server, gateway over HTTP and retrieval service (model, index, catalog); only the
verifier is a fake. `plugin/test/e2e/library-sync.mjs` runs the plugin's sync module with a
fake Zotero (plugin/test/fake-zotero.js) holding a real fixture PDF in My Library and another
in a group library (plus a feed, never sent): the full sync sends both libraries, each under
its own library_id, and uploads both PDFs; a note added while watching follows through the
notifier, and a restart sends nothing. The server must then hold and index exactly that, the
group's PDF under `group-<groupID>`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
from pathlib import Path

import httpx
import pytest

from harness.serving import serving
from harness.system import FakeVerifier
from zocrates_retrieval.adapters.store import Tenant, count_chunks
from zocrates_runtime.settings import ZocratesSettings

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "plugin" / "test" / "e2e" / "library-sync.mjs"
PDF = ROOT.parent / "shared" / "fixtures" / "pdfs" / "cermine" / "test1.pdf"
GROUP_PDF = ROOT.parent / "shared" / "fixtures" / "pdfs" / "cermine" / "example2.pdf"
GROUP_ID = 4711

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.timeout(240)]


@contextlib.asynccontextmanager
async def hosted_stack(nats_url: str, data_dir: Path):
    from zocrates_gateway.app import create_app
    from zocrates_gateway.config import GatewaySettings
    from zocrates_retrieval.app import create_app as retrieval_app
    from zocrates_retrieval.config import RetrievalSettings
    from zocrates_retrieval.service import RetrievalService
    from zocrates_verifier.app import create_app as verifier_app

    base = ZocratesSettings(nats_url=nats_url)
    retrieval = RetrievalService(RetrievalSettings(zotero_dir=None, data_dir=data_dir, embedding_device="cpu"))
    apps = [retrieval_app(base, service=retrieval), verifier_app(base, service=FakeVerifier())]
    for app in apps:
        await app.start()
    gateway = create_app(GatewaySettings(nats_url=nats_url))
    try:
        async with serving(gateway) as url:
            yield url, gateway, retrieval
    finally:
        for app in apps:
            await app.stop()


async def test_plugin_sync_module_uploads_a_zotero_pdf_that_the_server_indexes(nats_server, tmp_path, monkeypatch):
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the plugin tests need Node 20 (see `make test`)")
    if not PDF.exists() or not GROUP_PDF.exists():
        pytest.skip(f"PDF fixtures not found at {PDF.parent}")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # never discover a real ~/Zotero
    monkeypatch.delenv("ZOCRATES_ZOTERO_DIR", raising=False)
    monkeypatch.delenv("ZOCRATES_RETRIEVAL_ZOTERO_DIR", raising=False)
    async with hosted_stack(nats_server.url, tmp_path / "data") as (url, gateway, retrieval):
        token = await gateway.state.gateway.tokens.create("ada")
        proc = await asyncio.create_subprocess_exec(
            node,
            str(SCRIPT),
            cwd=str(ROOT / "plugin"),
            env={
                "PATH": "/usr/bin:/bin",
                "ZOCRATES_URL": url,
                "ZOCRATES_TOKEN": token,
                "ZOCRATES_PDF": str(PDF),
                "ZOCRATES_GROUP_PDF": str(GROUP_PDF),
                "ZOCRATES_GROUP_ID": str(GROUP_ID),
            },
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=180)
        log = out.decode(errors="replace")
        assert proc.returncode == 0, f"the sync script failed:\n{log[-4000:]}"
        report = json.loads(log.strip().splitlines()[-1])

        while (task := retrieval._hosted_runs.get("ada")) is not None and not task.done():
            await task
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.get(f"{url}/library/status", headers={"Authorization": f"Bearer {token}"})
        status = response.json()
        # Indexed under each library's own id: the group's PDF is not in My Library.
        chunks = {lib: count_chunks(retrieval.store, Tenant("ada", lib)) for lib in ("user", f"group-{GROUP_ID}")}

    assert report["first"]["full"] is True and report["first"]["uploaded"] == 2, report
    assert report["first"]["libraries"] == ["user", f"group-{GROUP_ID}"], "My Library and the group; no feed"
    assert report["first"]["failed"] == []
    assert report["restart"]["sent"] == 0, "a restart with nothing changed sends nothing"
    assert {"reading", "syncing", "uploading", "done"} <= set(report["phases"])
    assert status["source"] == "hosted" and status["error"] is None, status
    assert (status["items"], status["attachments"], status["uploaded"], status["awaiting_upload"]) == (2, 2, 2, 0)
    assert status["state"] == "done" and status["indexed"] >= 2 and status["chunks_indexed"] > 0, status
    assert chunks["user"] > 0 and chunks[f"group-{GROUP_ID}"] > 0, chunks
