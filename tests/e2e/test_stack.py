"""The whole system as `make run` starts it: real processes, a real Zotero library.

Starts `python -m zocrates_runtime.stack` (nats-server from the wheel and the five services as
supervised processes), waits for its banner, asks a question about a Zotero library built
from Zotero's published schema holding a real PDF, and checks the stream, the stored
session, and that Ctrl-C leaves no process behind; and that on a machine without Zotero it
starts with the bundled demo library (demo/).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import deque

import httpx
import psutil
import pytest

from harness.system import parse_sse
from zocrates_runtime.natsserver import free_port

pytestmark = [pytest.mark.slow, pytest.mark.connected]

QUESTION = "What are the complications of deep venous thrombosis prophylaxis in trauma patients?"


@pytest.fixture
def zotero_dir(tmp_path, fixtures_dir):
    from harness.zotero import ZoteroLibraryBuilder

    builder = ZoteroLibraryBuilder(tmp_path / "Zotero", fixtures_dir / "zotero" / "schema")
    item_id, _ = builder.add_item(
        "journalArticle",
        {
            "title": "Complications related to deep venous thrombosis prophylaxis in trauma: "
            "a systematic review of the literature",
            "date": "2010",
            "publicationTitle": "Journal of Trauma Management & Outcomes",
            "DOI": "10.1186/1752-2897-4-1",
        },
        creators=[("Indraneel", "Datta", "author"), ("Chad G", "Ball", "author")],
    )
    builder.add_attachment(item_id, "datta2010.pdf", (fixtures_dir / "pdfs/cermine/test1.pdf").read_bytes())
    builder.close()
    return tmp_path / "Zotero"


def start_stack(tmp_path, env: dict[str, str]) -> subprocess.Popen:
    """`python -m zocrates_runtime.stack` as `make run` starts it, in `tmp_path` with `env`: its
    data in tmp_path/data, nats-server and the gateway on free ports, JSON logs."""
    return subprocess.Popen(
        [sys.executable, "-m", "zocrates_runtime.stack"],
        env=env
        | {
            "ZOCRATES_DATA_DIR": str(tmp_path / "data"),
            "ZOCRATES_NATS_PORT": str(free_port()),
            "ZOCRATES_GATEWAY_PORT": str(free_port()),
            "ZOCRATES_LOG_JSON": "true",
        },
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def read_banner(proc: subprocess.Popen, deadline: float) -> tuple[str, str, list[str]]:
    """URL, token and the banner's lines, read up to its "Try a turn" line."""
    url = token = None
    lines: list[str] = []
    output: deque[str] = deque(maxlen=60)  # what the stack printed last, to say why it stopped
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            if proc.poll() is not None:
                shown = "\n".join(output)
                raise AssertionError(f"the stack exited with {proc.returncode}; its last output:\n{shown}")
            continue
        output.append(line.rstrip())
        if m := re.search(r"running at (http://\S+)", line):
            url = m.group(1)
        if m := re.search(r"Access token: (\S+)", line):
            token = m.group(1)
        if url:
            lines.append(line.rstrip())
        if url and token and "Try a turn" in line:
            return url, token, lines
    shown = "\n".join(output)
    raise AssertionError(f"no banner before the deadline; the stack's last output:\n{shown}")


def interrupt(proc: subprocess.Popen) -> None:
    """Ctrl-C the stack, as a user would; one that does not stop within 30 s fails the test."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def test_make_run_answers_a_library_question_and_stops_cleanly(tmp_path, zotero_dir):
    proc = start_stack(tmp_path, os.environ | {"ZOCRATES_RETRIEVAL_ZOTERO_DIR": str(zotero_dir)})
    try:
        url, token, banner = read_banner(proc, time.monotonic() + 240)
        assert any(line.startswith("  Answers: sentences quoted from your library") for line in banner)
        assert any(
            line.startswith(
                "  Citation checks: local (zocrates-verifier-minilm-v2, the trained model that ships with Zocrates)"
            )
            for line in banner
        )
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 6  # nats-server + five services
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=120) as client:
            events = []
            for _ in range(60):  # the first ingest of the library may still be running
                r = client.post(f"{url}/chat", json={"message": QUESTION}, headers=auth)
                events = parse_sse(r.text)
                if events[-1]["event"] == "done":
                    break
                assert events[-1]["data"]["code"] == "retrieval_not_available", events[-1]
                time.sleep(2)
            done = events[-1]["data"]
            assert events[-1]["event"] == "done", events[-1]
            assert done["citations"], done["text"]
            assert all(c["item_key"] for c in done["citations"])
            assert "Datta" in done["text"]  # the source list names the paper's authors
            session = client.get(f"{url}/sessions/{done['session_id']}", headers=auth).json()
            assert session["turns"][-1] == done
    finally:
        interrupt(proc)
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, f"orphans left: {[p.pid for p in alive]}"


#: The demo library's items (demo/library.toml).
DEMO_ITEMS = {"9MZZ8GTY", "2YMFSIPP", "BL3QQWU7"}


def test_make_run_without_zotero_starts_with_the_demo_library(tmp_path):
    """Issue 14: no ~/Zotero and no ZOCRATES_ZOTERO_DIR -> the bundled demo library, named as
    the demo in the banner, /health and /library/status, indexed and answered from."""
    (tmp_path / "home").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("ZOTERO_DIR") and k != "ZOCRATES_MODE"}
    proc = start_stack(tmp_path, env | {"HOME": str(tmp_path / "home")})
    try:
        url, token, banner = read_banner(proc, time.monotonic() + 240)
        assert any(line.startswith("  Library: the demo library, 3 open-access papers") for line in banner), banner
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(timeout=120) as client:
            library = client.get(f"{url}/health", headers=auth).json()["services"]["retrieval"]["library"]
            assert (library["source"], library["papers"]) == ("demo", 3)
            for _ in range(120):  # the first ingest of the demo runs in the background
                status = client.get(f"{url}/library/status", headers=auth).json()
                if status["state"] in ("done", "failed"):
                    break
                time.sleep(1)
            assert (status["source"], status["state"], status["items"], status["indexed"]) == ("demo", "done", 3, 3)
            r = client.post(
                f"{url}/chat",
                headers=auth,
                json={"message": "How selective for the N-domain is the ACE inhibitor 33RE?"},
            )
            events = parse_sse(r.text)
            assert events[-1]["event"] == "done", events[-1]
            references = events[-1]["data"]["references"]
            items = {ref["item_key"] for ref in references["cited"] + references["considered"]}
            assert "BL3QQWU7" in items and items <= DEMO_ITEMS, items
    finally:
        interrupt(proc)
