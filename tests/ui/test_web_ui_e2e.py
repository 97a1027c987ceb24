"""The sidebar in a real headless Chromium against the real gateway (issue 7).

Starts `running_system` (real nats-server and gateway, instant fake retrieval and verifier)
with a discovery service that answers from recorded OpenAlex candidates
(fixtures/candidates.json), then drives `plugin/test/e2e/web-ui.mjs` with playwright-core
and Debian's chromium. Screenshots land in test-artifacts/ui/.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from harness.evidence import scored
from harness.system import running_system
from zocrates_contracts import (
    Candidate,
    CandidatesFound,
    DiscoveryRequested,
    LibraryOutline,
    LibraryOutlineRequested,
    LibraryStatus,
    LibraryStatusRequested,
    OutlineCollection,
    OutlineLibrary,
    OutlineTag,
)
from zocrates_contracts.subjects import DISCOVERY_CONSUMER
from zocrates_runtime import bus
from zocrates_runtime.service import service_app
from zocrates_runtime.settings import ZocratesSettings

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "plugin" / "test" / "e2e" / "web-ui.mjs"
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CANDIDATES = json.loads((Path(__file__).parent / "fixtures" / "candidates.json").read_text())
CHROMIUM = os.environ.get("ZOCRATES_CHROMIUM", "/usr/bin/chromium")

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.timeout(240)]


def recorded_discovery(nats_url: str):
    """A discovery service on the bus that answers every request with the recorded candidates."""
    broker = bus.make_broker(ZocratesSettings(nats_url=nats_url))

    @bus.request_consumer(broker, DiscoveryRequested, durable=DISCOVERY_CONSUMER, service="discovery")
    async def on_request(request: DiscoveryRequested):
        """Recorded OpenAlex candidates."""
        return CandidatesFound(**request.reply_fields(), candidates=[Candidate.model_validate(c) for c in CANDIDATES])

    bus.health_responder(broker, "discovery", lambda: {"status": "ok", "capability": "recorded"}, "recorded")
    return service_app(broker)


async def demo_library_status(request: LibraryStatusRequested) -> LibraryStatus:
    """What retrieval answers when it reads the bundled demo library (no Zotero library here)."""
    return LibraryStatus(
        **request.reply_fields(),
        source="demo",
        state="done",
        ready=True,
        items=3,
        attachments=3,
        sources_total=3,
        sources_done=3,
        indexed=3,
    )


async def demo_outline(request: LibraryOutlineRequested) -> LibraryOutline:
    """A library with a collection, a subcollection and a tag, for the scope chip."""
    found = {
        "collections": [
            OutlineCollection(library_id="user", key="TRAUMA01", name="Trauma", items=2),
            OutlineCollection(library_id="user", key="REVIEWS1", name="Reviews", parent_key="TRAUMA01", items=1),
        ],
        "tags": [OutlineTag(library_id="user", tag="to-read", items=3)],
    }
    return LibraryOutline(
        **request.reply_fields(),
        libraries=[OutlineLibrary(library_id="user", name="My Library")],
        **{request.part: found[request.part]},
    )


def _require_tools() -> tuple[str, Path]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the web UI test needs Node 20 (see `make test`)")
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"chromium not found at {CHROMIUM}; install it with `apt-get install -y chromium` "
            "(`make test` does this when run as root)"
        )
    modules = ROOT / "plugin" / "node_modules" / "playwright-core"
    if not modules.exists() or not (ROOT / "plugin" / "content" / "vendor" / "katex.mjs").exists():
        pytest.fail("plugin/node_modules or plugin/content/vendor is missing; run `npm ci` in plugin/")
    return node, modules


async def test_sidebar_web_page_end_to_end_in_chromium(nats_server):
    node, _ = _require_tools()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with running_system(nats_server.url) as system:
        # Swap the not-yet-built discovery service for one with recorded provider answers.
        await system.service_apps["discovery"].stop()
        discovery = recorded_discovery(nats_server.url)
        await discovery.start()
        # A slower verifier leaves time to press Stop during a turn.
        system.verifier.delay = 1.5
        system.retrieval.library_status = demo_library_status
        system.retrieval.outline = demo_outline
        system.retrieval.score_units = True  # units scored by the real model, as the answer writer gets them
        # Loaded before the page asks: on a busy machine the first load outlasts the page's 30 s wait.
        await asyncio.to_thread(scored, "warm up", system.retrieval.chunks)
        try:
            env = os.environ | {
                "ZOCRATES_URL": system.url,
                "ZOCRATES_TOKEN": system.token,
                "ZOCRATES_ARTIFACTS": str(ARTIFACTS),
                "ZOCRATES_CHROMIUM": CHROMIUM,
            }
            proc = await asyncio.create_subprocess_exec(
                node,
                str(SCRIPT),
                cwd=str(ROOT / "plugin"),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), timeout=200)
            log = out.decode(errors="replace")
            (ARTIFACTS / "e2e.log").write_text(log)
            assert proc.returncode == 0, f"browser test failed:\n{log[-6000:]}"
            report = json.loads(log.strip().splitlines()[-1])
        finally:
            await discovery.stop()
    assert report["ok"] is True
    assert report["pills"] >= 1
    assert report["screenshots"]
