"""The embedded stack: what `make run` runs (`python -m zocrates_runtime.stack`).

Starts the real nats-server (JetStream, loopback only, store in `<data>/nats`, its log in
`<data>/nats.log`), creates or reads the local user's access token, supervises the five
services as separate processes, and once the gateway's `/health` reports every service ready
prints its URL, the token and a `curl` to try. Ctrl-C (or SIGTERM/SIGHUP) stops the services,
then nats-server.

Settings: `StackSettings`, read like every service's (environment, `.env`, `zocrates.toml`):
the data dir (`ZOCRATES_DATA_DIR`, default `./data`), nats-server's port (`ZOCRATES_NATS_PORT`,
default 4222) and the gateway's (`ZOCRATES_GATEWAY_PORT`, default 8000). The services get
`ZOCRATES_NATS_URL`, `ZOCRATES_DATA_DIR` (absolute), `ZOCRATES_GATEWAY_PORT` and
`ZOCRATES_MODE=local`.

If the stack process is killed outright, nothing gets to clean up, so every direct child
(nats-server and the services) is started with Linux's parent-death signal (see
`supervisor.with_parent_death_signal`): the kernel kills them when the stack dies, which needs
neither a watchdog process nor polling. Elsewhere only an orderly stop cleans up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping

from pydantic import Field, model_validator
from pydantic_settings import SettingsConfigDict

from zocrates_runtime.logging import configure_logging
from zocrates_runtime.natsserver import NatsServer, NatsServerError
from zocrates_runtime.settings import GatewayPortSettings, Port
from zocrates_runtime.supervisor import Child, Supervisor, with_parent_death_signal

log = logging.getLogger("zocrates.stack")

SERVICES = ("gateway", "retrieval", "verifier", "discovery", "staging")
HOST = "127.0.0.1"
PATIENCE = 60.0  # seconds; a first start may load models, so only warn, never quit
TOKEN_COMMAND = ("-m", "zocrates_gateway.admin", "ensure-local-token")


class StackError(Exception):
    """Why the stack cannot start, worded for the person who ran `make run`."""


class StackSettings(GatewayPortSettings):
    """What `make run` reads; the data dir and the gateway's port are the services' own settings."""

    # An empty variable means the default, as it did when the launcher read os.environ itself.
    model_config = SettingsConfigDict(env_ignore_empty=True)

    nats_port: Port = Field(default=4222, description="Port of the nats-server `make run` starts (loopback)")

    @model_validator(mode="after")
    def _absolute_data_dir(self) -> StackSettings:
        self.data_dir = self.data_dir.resolve()  # the services get it, whatever their directory
        return self

    @classmethod
    def read(cls) -> StackSettings:
        """The settings, in local mode whatever the sources say (the embedded bus is loopback
        only); a StackError names what is wrong."""
        try:
            return cls.load(mode="local")
        except ValueError as exc:
            raise StackError(str(exc)) from None

    @property
    def embedded_nats_url(self) -> str:
        return f"nats://{HOST}:{self.nats_port}"

    @property
    def gateway_url(self) -> str:
        return f"http://{HOST}:{self.gateway_port}"


def ensure_port_free(port: int, env_var: str, user: str) -> None:
    """Fail with a clear message when something already listens on loopback `port`."""
    with socket.socket() as sock:
        # SO_REUSEADDR so a closed socket lingering in TIME_WAIT does not count as taken;
        # a live listener still does.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as exc:
            raise StackError(
                f"port {port} on {HOST} is already in use ({exc.strerror}), so {user} cannot "
                f"listen on it. Hint: stop what uses it (another `make run`?) or set {env_var} "
                f"to a free port."
            ) from None


class _StackNatsServer(NatsServer):
    """nats-server that dies with the stack even if the stack is SIGKILLed."""

    def command(self) -> list[str]:
        return with_parent_death_signal(super().command())


def ensure_local_token(env: Mapping[str, str], timeout: float = 120.0) -> str:
    """Run the gateway's `ensure-local-token` CLI; its last stdout line is the token."""
    cmd = [sys.executable, *TOKEN_COMMAND]
    shown = "python " + " ".join(TOKEN_COMMAND)
    try:
        done = subprocess.run(cmd, env=dict(env), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise StackError(f"`{shown}` did not finish within {timeout:.0f} s") from None
    if done.returncode != 0:
        stderr = done.stderr.strip()
        if "No module named" in stderr and "zocrates_gateway" in stderr:
            raise StackError(
                f"cannot create the local access token: `{shown}` is not available "
                f"({stderr.splitlines()[-1]}). Hint: `make run` installs the services; if the "
                f"gateway is installed, this build lacks its admin CLI."
            )
        tail = "\n".join(stderr.splitlines()[-20:])
        raise StackError(f"`{shown}` failed with exit code {done.returncode}:\n{tail}")
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        raise StackError(f"`{shown}` succeeded but printed no token on stdout")
    return lines[-1]


def banner(gateway_url: str, token: str, not_ready: list[str] | None = None, health: dict | None = None) -> str:
    """What the person who ran `make run` needs: URL, token, a request to paste, which library
    is read, how answers are written and citations checked (from the gateway's `/health`)."""
    auth = shlex.quote(f"Authorization: Bearer {token}")
    body = shlex.quote('{"message": "What does my library say about this topic?"}')
    lines = [
        "",
        f"  Zocrates is running at {gateway_url}",
        f"  Access token: {token}",
        *_library(health or {}),
        *_modes(health or {}),
        "",
        "  Try a turn:",
        f"    curl -N {gateway_url}/chat -H {auth} \\",
        f"      -H 'Content-Type: application/json' -d {body}",
        "",
        "  Ctrl-C stops everything.",
        "",
    ]
    if not_ready:
        lines[3:3] = [f"  Still starting: {', '.join(not_ready)} (see their [name] output)"]
    return "\n".join(lines)


def _library(health: dict) -> list[str]:
    """The banner's line on which library is read, when retrieval's /health detail says."""
    library = ((health.get("services") or {}).get("retrieval") or {}).get("library") or {}
    source = library.get("source")
    if source == "demo":
        papers = f"{library['papers']} " if library.get("papers") else ""
        return [
            f"  Library: the demo library, {papers}open-access papers (demo/README.md); "
            "set ZOCRATES_ZOTERO_DIR to your Zotero data directory to use your own"
        ]
    if source == "zotero_dir":
        return [f"  Library: your Zotero library in {library.get('zotero_dir')}"]
    if source == "none":
        return [
            "  Library: none found on this machine; set ZOCRATES_ZOTERO_DIR to your Zotero "
            "data directory (the folder holding zotero.sqlite)"
        ]
    return []


def _modes(health: dict) -> list[str]:
    """The banner's lines on the answer writer and the citation checker, when /health says."""
    lines = []
    gateway = health.get("gateway") or {}
    if gateway.get("answers") == "extractive":
        lines.append(
            "  Answers: sentences quoted from your library (no LLM is set; "
            "ZOCRATES_LLM_URL, ZOCRATES_LLM_API_KEY and ZOCRATES_LLM_MODEL give "
            "written answers)"
        )
    elif gateway.get("answers") == "llm":
        lines.append(f"  Answers: written by {gateway.get('llm_model') or 'the configured LLM'}")
    verifier = (health.get("services") or {}).get("verifier") or {}
    if verifier.get("status") == "ok" and verifier.get("provider"):
        where = f" on {verifier['device']}" if verifier.get("device") else ""
        kind = _VERIFIER_SOURCES.get(verifier.get("model_source") or "", "")
        lines.append(
            f"  Citation checks: {verifier['provider']} ({verifier.get('model') or '-'}"
            f"{', ' + kind if kind else ''}){where}, threshold "
            f"{verifier.get('threshold', '-')}"
            f"{' (calibrated for this model)' if verifier.get('threshold_source') == 'calibrated' else ''}"
        )
        if verifier.get("model_source") == "heuristic-fallback" and verifier.get("fallback_reason"):
            lines.append(f"    the heuristic answers because {verifier['fallback_reason']}")
    return lines


#: How the banner names the verifier's `model_source` (its /health).
_VERIFIER_SOURCES = {
    "trained": "the trained model that ships with Zocrates",
    "heuristic-fallback": "fallback: the trained model did not load",
    "checkpoint": "your checkpoint",
}


def probe_health(gateway_url: str, token: str) -> dict | None:
    """The gateway's `/health` body as seen with the token; None while it does not answer."""
    request = urllib.request.Request(f"{gateway_url}/health", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=2.0) as response:
            raw = response.read()
    except (urllib.error.URLError, OSError, ValueError):
        return None  # not listening yet, or an error status
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _not_ready(health: dict) -> list[str]:
    services = health.get("services")
    if not isinstance(services, dict):
        return []
    return sorted(
        name for name, state in services.items() if not isinstance(state, dict) or state.get("status") != "ok"
    )


async def _announce_when_ready(config: StackSettings, token: str, running: asyncio.Task) -> None:
    """Print the banner once the gateway reports every service ready.

    After PATIENCE the banner comes anyway, naming what is still starting, so a slow or
    broken service does not hide the URL and token.
    """
    started = time.monotonic()
    warned = False
    while not running.done():
        health = await asyncio.to_thread(probe_health, config.gateway_url, token)
        patience_over = time.monotonic() - started > PATIENCE
        if health is not None and (not (waiting := _not_ready(health)) or patience_over):
            # print, not log: the token must be shown once, and the log chain redacts it.
            print(banner(config.gateway_url, token, waiting, health), flush=True)
            return
        if health is None and patience_over and not warned:
            warned = True
            log.warning(
                "the gateway has not answered %s/health after %.0f s; still waiting (its output is prefixed [gateway])",
                config.gateway_url,
                PATIENCE,
            )
        # Re-check a few times a second, but wake at once if the supervisor finishes.
        await asyncio.wait({running}, timeout=0.25)


async def _supervise(supervisor: Supervisor, nats: NatsServer, config: StackSettings, token: str) -> int:
    supervisor.stop_on_signals()
    running = asyncio.create_task(supervisor.run())
    nats_exit = asyncio.create_task(asyncio.to_thread(nats.process.wait))
    announce = asyncio.create_task(_announce_when_ready(config, token, running))
    try:
        await asyncio.wait({running, nats_exit}, return_when=asyncio.FIRST_COMPLETED)
        nats_died = nats_exit.done()
        if nats_died:
            log.error(
                "nats-server exited unexpectedly (code %s); stopping the stack. Its log: %s",
                nats_exit.result(),
                nats.log_file,
            )
            supervisor.stop()
        code = await running
    finally:
        announce.cancel()
        # Services first, so they can drain and ack; the bus last. Stopping it here also
        # ends the thread waiting on it, which asyncio.run waits for on the way out.
        await asyncio.to_thread(nats.stop)
        await nats_exit
    return 1 if nats_died else code


def run_stack(config: StackSettings) -> int:
    """Start nats-server and the services, block until stopped; returns the exit code."""
    ensure_port_free(config.nats_port, "ZOCRATES_NATS_PORT", "nats-server")
    ensure_port_free(config.gateway_port, "ZOCRATES_GATEWAY_PORT", "the gateway")
    config.data_dir.mkdir(parents=True, exist_ok=True)
    # Started from the main thread on purpose: the parent-death signal follows the thread
    # that spawned the child, and the main thread lives as long as the stack.
    nats = _StackNatsServer(
        config.data_dir / "nats", port=config.nats_port, host=HOST, log_file=config.data_dir / "nats.log"
    )
    try:
        nats.start()
    except NatsServerError as exc:
        raise StackError(f"{exc}\nIts log: {nats.log_file}") from None
    try:
        log.info("nats-server ready on %s (JetStream store %s)", nats.url, nats.store_dir)
        env = {
            **os.environ,
            "ZOCRATES_NATS_URL": config.embedded_nats_url,
            "ZOCRATES_DATA_DIR": str(config.data_dir),
            "ZOCRATES_MODE": "local",
            "ZOCRATES_GATEWAY_PORT": str(config.gateway_port),  # where /health is polled
            "PYTHONUNBUFFERED": "1",  # children's output reaches the terminal as it happens
        }
        # Children write to a pipe, so they would pick JSON; follow what the person sees.
        log_json = config.log_json if config.log_json is not None else not sys.stdout.isatty()
        env["ZOCRATES_LOG_JSON"] = str(log_json).lower()
        token = ensure_local_token(env)
        supervisor = Supervisor(
            [Child(name, [sys.executable, "-m", f"zocrates_{name}"], env=env) for name in SERVICES],
            stop_timeout=10.0,
        )
        code = asyncio.run(_supervise(supervisor, nats, config, token))
        if supervisor.failed:
            log.error("stopped because %s kept crashing", supervisor.failed)
        return code
    finally:
        nats.stop()


def main() -> int:
    """Entry point of `make run`; exit codes: 0 stopped, 1 a part failed, 2 could not start."""
    try:
        config = StackSettings.read()
        configure_logging("stack", json=config.log_json, level=config.log_level)
        return run_stack(config)
    except StackError as exc:
        print(f"zocrates: cannot start the stack: {exc}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the supervisor took over the signal
        return 130


if __name__ == "__main__":
    sys.exit(main())
