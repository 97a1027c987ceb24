"""The Zotero preferences pane against the real gateway (issue "Trust you can see").

Real nats-server and gateway over HTTP (`running_system`; fake retrieval and verifier).
`plugin/test/e2e/preferences.mjs` runs the pane's own script (plugin/content/zotero/
preferences.js) in Node with a fake document and Zotero's prefs: it shows the settings the
server keeps for the user, saves a new threshold and unsupported-claims mode through the pane's
listeners, and tests the decision connection. The server must then hold what the pane saved.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from harness.system import running_system

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "plugin" / "test" / "e2e" / "preferences.mjs"

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.timeout(120)]


async def test_the_preferences_pane_reads_and_saves_the_settings_the_gateway_keeps(nats_server):
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the plugin tests need Node 20 (see `make test`)")
    async with running_system(nats_server.url) as system:
        settings = f"{system.url}/settings"
        before = {"verification_threshold": 0.7, "unsupported_claims": "leave"}
        assert (await system.client.put(settings, headers=system.auth, json=before)).status_code == 200
        proc = await asyncio.create_subprocess_exec(
            node,
            str(SCRIPT),
            cwd=str(ROOT / "plugin"),
            env={"PATH": "/usr/bin:/bin", "ZOCRATES_URL": system.url, "ZOCRATES_TOKEN": system.token},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
        log = out.decode(errors="replace")
        assert proc.returncode == 0, f"the preferences script failed:\n{log[-4000:]}"
        report = json.loads(log.strip().splitlines()[-1])
        stored = (await system.client.get(settings, headers=system.auth)).json()

    assert report["loaded"] == {
        "enabled": True,
        "threshold": "0.70",
        "unsupported": "leave",
        "verifiersDefault": False,
        "model": "Decision model: fake",
    }, report
    saved = "Saved for your account on the server."
    assert report["threshold"] == {"shown": "0.85", "status": saved}
    assert report["unsupported"] == {"shown": "remove", "status": saved}
    assert report["revision"] == 2, "each save tells open sidebars to read the settings again"
    assert stored == {"verification_enabled": True, "verification_threshold": 0.85, "unsupported_claims": "remove"}
    assert report["decision"]["ok"] == "ok", report["decision"]
    assert pytest.approx(0.9) == float(report["decision"]["text"].split("probability ")[1][:4])
    assert report["decision"]["text"].startswith("Reachable in ") and " ms; " in report["decision"]["text"]
    assert report["connection"] == "Connected; every service is ready."


def test_the_panes_threshold_stepper_is_the_servers():
    """The pane is a classic script (no module import in Zotero's preferences window), so its
    stepper copies the server's bounds: this holds the script, the input and the label to them."""
    import re

    from zocrates_gateway.domain.settings import THRESHOLD_MAX, THRESHOLD_MIN, THRESHOLD_STEP

    script = (ROOT / "plugin" / "content" / "zotero" / "preferences.js").read_text()
    pane = (ROOT / "plugin" / "content" / "zotero" / "preferences.xhtml").read_text()
    copied = re.search(r"const THRESHOLD = \{ min: ([\d.]+), max: ([\d.]+), step: ([\d.]+) \}", script)
    assert copied and tuple(map(float, copied.groups())) == (THRESHOLD_MIN, THRESHOLD_MAX, THRESHOLD_STEP)
    stepper = re.search(r'id="zocrates-verification-threshold" min="([\d.]+)" max="([\d.]+)" step="([\d.]+)"', pane)
    assert stepper and tuple(map(float, stepper.groups())) == (THRESHOLD_MIN, THRESHOLD_MAX, THRESHOLD_STEP)
    assert f"({THRESHOLD_MIN:.2f} to {THRESHOLD_MAX:.2f})" in pane
