"""The embedded stack, run as `make run` runs it, with stand-in services.

The stand-ins shadow the real service packages through PYTHONPATH: a gateway that answers
/health, an admin CLI that prints a token, a retrieval service that checks JetStream is on,
and sleepers for the rest. They exercise the stack's own job (the bus, the token, the
supervision, the banner, the shutdown) without depending on the services' progress.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from zocrates_runtime.natsserver import free_port
from zocrates_runtime.stack import SERVICES, StackError, StackSettings, banner, ensure_port_free

PY = sys.executable

GATEWAY = """
import http.server, json, os, pathlib
env = {k: os.environ[k] for k in ("ZOCRATES_NATS_URL", "ZOCRATES_DATA_DIR", "ZOCRATES_MODE")}
print("env", json.dumps(env), flush=True)
marker = pathlib.Path(os.environ["ZOCRATES_DATA_DIR"]) / "retrieval-ready"

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        # Like the real gateway: readiness only for a valid token.
        body = {"status": "ok"}
        if self.headers.get("Authorization") == "Bearer tok_local_123":
            ready = marker.exists()
            body = {"status": "ok" if ready else "degraded",
                    "services": {"retrieval": {"status": "ok" if ready else "unavailable"}}}
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args):
        pass

port = int(os.environ["ZOCRATES_GATEWAY_PORT"])
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""

ADMIN = """
import sys
assert sys.argv[1:] == ["ensure-local-token"], sys.argv
print("local user: ready")
print("tok_local_123")
"""

RETRIEVAL = """
import asyncio, os, pathlib, nats

async def main():
    nc = await nats.connect(os.environ["ZOCRATES_NATS_URL"])
    await nc.jetstream().account_info()  # raises unless JetStream is on
    print("jetstream ok", flush=True)
    await asyncio.sleep(0.3)  # a slow start: the banner must wait for it
    (pathlib.Path(os.environ["ZOCRATES_DATA_DIR"]) / "retrieval-ready").touch()
    await asyncio.Event().wait()

asyncio.run(main())
"""

SLEEPER = "import time; time.sleep(120)"


def _fake_services(root, *, with_admin=True):
    sources = {"gateway": GATEWAY, "retrieval": RETRIEVAL}
    for name in SERVICES:
        package = root / f"zocrates_{name}"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "__main__.py").write_text(textwrap.dedent(sources.get(name, SLEEPER)))
    if with_admin:
        (root / "zocrates_gateway" / "admin.py").write_text(textwrap.dedent(ADMIN))


@pytest.fixture
def stack_env(tmp_path):
    fakes = tmp_path / "fakes"
    _fake_services(fakes)
    return {
        **os.environ,
        # The stand-ins first; then the path the tests run with, so the stack is this checkout's.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(fakes), os.environ.get("PYTHONPATH")])),
        "ZOCRATES_DATA_DIR": str(tmp_path / "data"),
        "ZOCRATES_NATS_PORT": str(free_port()),
        "ZOCRATES_GATEWAY_PORT": str(free_port()),
    }


@pytest.fixture
def run_until_banner(stack_env, tmp_path, read_lines, wait_gone):
    """Start the stack; return it, its output and its descendants' pids once it is ready."""
    started = []

    def run():
        proc = subprocess.Popen(
            [PY, "-m", "zocrates_runtime.stack"],
            env=stack_env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(proc)
        lines = read_lines(proc)
        lines.wait_for(lambda line: "Access token: tok_local_123" in line, timeout=20)
        descendants = psutil.Process(proc.pid).children(recursive=True)
        names = {" ".join(p.cmdline()[1:3]) for p in descendants}
        assert {f"-m zocrates_{n}" for n in SERVICES} <= names
        assert any(p.name() == "nats-server" for p in descendants)
        return proc, lines, [p.pid for p in descendants]

    yield run
    for proc in started:  # a failed test must not leave a stack behind
        if proc.poll() is None:
            proc.terminate()
            proc.wait(20)


def test_stack_starts_everything_prints_the_banner_and_ctrl_c_stops_it_all(
    stack_env, tmp_path, run_until_banner, wait_gone
):
    proc, lines, pids = run_until_banner()
    env_line = lines.wait_for(lambda line: line.startswith("[gateway] env "))
    gateway_env = json.loads(env_line.removeprefix("[gateway] env "))
    assert gateway_env == {
        "ZOCRATES_NATS_URL": f"nats://127.0.0.1:{stack_env['ZOCRATES_NATS_PORT']}",
        "ZOCRATES_DATA_DIR": str(Path(stack_env["ZOCRATES_DATA_DIR"]).resolve()),
        "ZOCRATES_MODE": "local",
    }
    lines.wait_for(lambda line: line == "[retrieval] jetstream ok")
    assert (tmp_path / "data" / "retrieval-ready").exists()  # the banner waited for readiness
    assert not any("Still starting" in line for line in lines.seen)
    assert (tmp_path / "data" / "nats" / "jetstream").is_dir()
    lines.wait_for(lambda line: "curl -N http://127.0.0.1:" in line and "Bearer tok_local_" in line)

    proc.send_signal(signal.SIGINT)
    assert proc.wait(15) == 0
    assert wait_gone(pids, timeout=2) == []
    ensure_port_free(int(stack_env["ZOCRATES_NATS_PORT"]), "ZOCRATES_NATS_PORT", "nats-server")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux only")
def test_killing_the_stack_takes_nats_server_and_services_with_it(run_until_banner, wait_gone):
    proc, _, pids = run_until_banner()
    proc.kill()
    proc.wait(10)
    assert wait_gone(pids, timeout=5) == []


def test_a_dead_nats_server_stops_the_stack(run_until_banner, wait_gone):
    proc, lines, pids = run_until_banner()
    [nats] = [p for p in pids if psutil.Process(p).name() == "nats-server"]
    os.kill(nats, signal.SIGKILL)
    assert proc.wait(15) == 1
    lines.wait_for(lambda line: "nats-server exited unexpectedly" in line)
    assert wait_gone(pids, timeout=2) == []


def test_stack_fails_clearly_when_the_nats_port_is_taken(nats_server, stack_env, tmp_path):
    env = {**stack_env, "ZOCRATES_NATS_PORT": str(nats_server.port)}
    done = subprocess.run(
        [PY, "-m", "zocrates_runtime.stack"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert f"port {nats_server.port} on 127.0.0.1 is already in use" in done.stderr
    assert "ZOCRATES_NATS_PORT" in done.stderr


def test_stack_fails_clearly_without_the_admin_cli_and_stops_nats(tmp_path, stack_env):
    fakes = tmp_path / "no-admin"
    _fake_services(fakes, with_admin=False)
    env = {**stack_env, "PYTHONPATH": stack_env["PYTHONPATH"].replace(str(tmp_path / "fakes"), str(fakes))}
    done = subprocess.run(
        [PY, "-m", "zocrates_runtime.stack"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert "python -m zocrates_gateway.admin ensure-local-token` is not available" in done.stderr
    # nats-server was started before the token step; it must not be left behind.
    ensure_port_free(int(env["ZOCRATES_NATS_PORT"]), "ZOCRATES_NATS_PORT", "nats-server")


@pytest.fixture
def launcher_dir(tmp_path, monkeypatch):
    """An empty working directory and none of the launcher's variables set."""
    monkeypatch.chdir(tmp_path)
    for name in ("ZOCRATES_CONFIG", "ZOCRATES_DATA_DIR", "ZOCRATES_NATS_PORT", "ZOCRATES_GATEWAY_PORT"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_config_defaults_and_a_bad_port_is_named(launcher_dir, monkeypatch):
    config = StackSettings.read()
    assert config.data_dir == launcher_dir.resolve() / "data"
    assert (config.nats_port, config.gateway_port) == (4222, 8000)
    monkeypatch.setenv("ZOCRATES_GATEWAY_PORT", "80a")
    with pytest.raises(StackError, match="ZOCRATES_GATEWAY_PORT must be a port number"):
        StackSettings.read()


def test_the_launcher_reads_zocrates_toml_and_dot_env_like_the_services(launcher_dir, monkeypatch):
    (launcher_dir / "zocrates.toml").write_text('data_dir = "lab-data"\nnats_port = 14222\nmode = "hosted"\n')
    (launcher_dir / ".env").write_text("ZOCRATES_GATEWAY_PORT=18000\n")
    config = StackSettings.read()
    assert config.data_dir == launcher_dir.resolve() / "lab-data"
    assert (config.nats_port, config.gateway_port) == (14222, 18000)
    assert config.mode == "local"  # the embedded stack is loopback only, whatever the file says
    monkeypatch.setenv("ZOCRATES_NATS_PORT", "24222")  # the environment still wins
    assert StackSettings.read().nats_port == 24222


def test_a_port_in_zocrates_toml_reaches_the_services(stack_env, tmp_path, run_until_banner):
    ports = {name: stack_env.pop(name) for name in ("ZOCRATES_NATS_PORT", "ZOCRATES_GATEWAY_PORT")}
    (tmp_path / "zocrates.toml").write_text(
        f"nats_port = {ports['ZOCRATES_NATS_PORT']}\ngateway_port = {ports['ZOCRATES_GATEWAY_PORT']}\n"
    )
    _, lines, _ = run_until_banner()
    env_line = lines.wait_for(lambda line: line.startswith("[gateway] env "))
    gateway_env = json.loads(env_line.removeprefix("[gateway] env "))
    assert gateway_env["ZOCRATES_NATS_URL"] == f"nats://127.0.0.1:{ports['ZOCRATES_NATS_PORT']}"
    lines.wait_for(lambda line: f"Zocrates is running at http://127.0.0.1:{ports['ZOCRATES_GATEWAY_PORT']}" in line)


def test_banner_has_a_ready_to_paste_curl():
    text = banner("http://127.0.0.1:8000", "tok_1")
    assert "http://127.0.0.1:8000" in text and "Access token: tok_1" in text
    assert "curl -N http://127.0.0.1:8000/chat -H 'Authorization: Bearer tok_1'" in text
    assert """-d '{"message": """ in text
    assert "Still starting" not in text
    assert "Still starting: retrieval, verifier" in banner("http://x", "t", ["retrieval", "verifier"])


def test_banner_says_how_answers_are_written_and_citations_checked():
    verifier = {
        "status": "ok",
        "provider": "heuristic",
        "model": "lexical-logistic-v1",
        "device": "cpu",
        "threshold": 0.6,
    }
    text = banner("http://x", "t", health={"gateway": {"answers": "extractive"}, "services": {"verifier": verifier}})
    assert "Answers: sentences quoted from your library (no LLM is set; ZOCRATES_LLM_URL" in text
    assert "Citation checks: heuristic (lexical-logistic-v1) on cpu, threshold 0.6" in text
    trained = {
        "status": "ok",
        "provider": "local",
        "model": "zocrates-verifier-minilm-v2",
        "model_source": "trained",
        "device": "cpu",
        "threshold": 0.73,
        "threshold_source": "calibrated",
    }
    text = banner("http://x", "t", health={"services": {"verifier": trained}})
    assert (
        "Citation checks: local (zocrates-verifier-minilm-v2, the trained model that ships "
        "with Zocrates) on cpu, threshold 0.73 (calibrated for this model)"
    ) in text
    fallback = verifier | {
        "model_source": "heuristic-fallback",
        "fallback_reason": "the trained model is not at /x/model",
    }
    text = banner("http://x", "t", health={"services": {"verifier": fallback}})
    assert ("Citation checks: heuristic (lexical-logistic-v1, fallback: the trained model did not load) on cpu") in text
    assert "the heuristic answers because the trained model is not at /x/model" in text
    text = banner(
        "http://x",
        "t",
        health={
            "gateway": {"answers": "llm", "llm_model": "qwen3"},
            "services": {"verifier": {"status": "unavailable"}},
        },
    )
    assert "Answers: written by qwen3" in text and "Citation checks" not in text
    assert "Answers" not in banner("http://x", "t")  # an older gateway: nothing is guessed


def test_banner_names_the_library_and_the_demo_as_the_demo():
    def library(**detail):
        return banner("http://x", "t", health={"services": {"retrieval": {"status": "ok", "library": detail}}})

    text = library(source="demo", zotero_dir="/src/zocrates/demo/zotero", papers=3)
    assert (
        "  Library: the demo library, 3 open-access papers (demo/README.md); set ZOCRATES_ZOTERO_DIR "
        "to your Zotero data directory to use your own"
    ) in text.splitlines()
    assert (
        "  Library: your Zotero library in /home/ada/Zotero"
        in library(source="zotero_dir", zotero_dir="/home/ada/Zotero").splitlines()
    )
    assert "Library: none found on this machine; set ZOCRATES_ZOTERO_DIR" in library(source="none", zotero_dir=None)
    assert "Library" not in banner("http://x", "t", health={"services": {"retrieval": {"status": "ok"}}})


def test_a_free_port_for_a_later_server_is_not_one_an_outgoing_connection_could_take():
    # The stack's ports are chosen before nats-server and the gateway bind them; a port from
    # the ephemeral range could meanwhile become the local port of any outgoing connection.
    low, high = (int(n) for n in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = {free_port() for _ in range(20)}
    assert len(ports) > 1
    for port in ports:
        assert not low <= port <= high
        ensure_port_free(port, "ZOCRATES_GATEWAY_PORT", "the gateway")  # and nothing holds it
