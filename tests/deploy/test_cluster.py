"""Multi-host rehearsal without Docker: a three-node NATS cluster on loopback, JetStream R3.

Three `nats-server` processes run the shipped deploy/cluster/nats.conf (routes, route and
client credentials, JetStream), each with its own name, ports and store. Two real gateways
(over HTTP, behind the shipped Caddyfile's reverse proxy) and the services' real bus apps
(instant fake domains, a little delay so turns are in flight) run turns through it, while the
test SIGKILLs one NATS server in the middle of turns, twice: first the audit stream's leader,
then the server the first gateway is connected to.

What must hold (and is printed as figures):
- every turn ends with a `done` or a clear `error` event; a turn that erred succeeds on retry;
- turns run while a server is down (two of three are a quorum);
- nothing stored is lost: every completed turn is in its session (KV), the audit stream has
  a `TurnResolved` per completed turn, and after the killed server rejoins, all three
  replicas of every stream and bucket hold the same message count.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.system import parse_sse, running_system
from zocrates_runtime.natsserver import NatsServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.connected, pytest.mark.timeout(360)]

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "cluster" / "nats.conf"
CADDYFILE = ROOT / "deploy" / "proxy" / "Caddyfile"
PASSWORD = "rehearsal-service-pw"
STREAMS = ("ZOCRATES", "ZOCRATES_EVENTS", "ZOCRATES_DLQ", "KV_zocrates_sessions", "KV_zocrates_tokens")


class Cluster:
    def __init__(self, root: Path) -> None:
        self.client_ports = [free_port() for _ in range(3)]
        self.route_ports = [free_port() for _ in range(3)]
        self.servers = [
            NatsServer(
                root / f"nats-{i + 1}",
                port=self.client_ports[i],
                server_name=f"nats-{i + 1}",
                http_port=free_port(),
                log_file=root / f"nats-{i + 1}.log",
                extra_args=["-c", str(CONF), "--cluster", f"nats://127.0.0.1:{self.route_ports[i]}"],
            )
            for i in range(3)
        ]

    def env(self) -> dict[str, str]:
        """The variables deploy/cluster/nats.conf reads; one environment serves all three."""
        routes = {
            f"NATS_ROUTE_{i + 1}": f"nats-route://route:route-pw@127.0.0.1:{p}" for i, p in enumerate(self.route_ports)
        }
        return {
            "NATS_SERVER_NAME": "set-by-flag",
            "NATS_ROUTE_PASSWORD": "route-pw",
            "NATS_ZOCRATES_PASSWORD": PASSWORD,
            "NATS_ADMIN_PASSWORD": "admin-pw",
            "NATS_SYNC_INTERVAL": "120s",
            "NATS_MAX_FILE_STORE": "1GB",
            **routes,
        }

    @property
    def url(self) -> str:
        # Credentials ride in the URLs here so the harness needs no extra settings; a
        # deployment sets ZOCRATES_NATS_USER/PASSWORD (tests/bus covers that path).
        return ",".join(f"nats://zocrates:{PASSWORD}@127.0.0.1:{s.port}" for s in self.servers)

    def by_name(self, name: str) -> NatsServer:
        return next(s for s in self.servers if s.server_name == name)

    def by_port(self, port: int) -> NatsServer:
        return next(s for s in self.servers if s.port == port)

    async def wait_healthy(self, servers=None, timeout: float = 30.0) -> None:
        """Until each server's /healthz says ok: routes up, JetStream meta group current."""
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient() as client:
            for server in servers or self.servers:
                while True:
                    try:
                        r = await client.get(f"http://127.0.0.1:{server.http_port}/healthz")
                        if r.status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{server.server_name} not healthy in {timeout}s")
                    await asyncio.sleep(0.2)

    async def replica_counts(self, server: NatsServer) -> dict[str, int]:
        """Messages each stream holds on this one server's replica (its own /jsz view)."""
        async with httpx.AsyncClient() as client:
            r = await client.get(
                f"http://127.0.0.1:{server.http_port}/jsz", params={"accounts": "true", "streams": "true"}
            )
        counts = {}
        for account in r.json().get("account_details", []):
            for stream in account.get("stream_detail", []):
                counts[stream["name"]] = stream["state"]["messages"]
        return counts

    async def wait_replicas_equal(self, timeout: float = 30.0) -> dict[str, int]:
        deadline = time.monotonic() + timeout
        while True:
            views = [{k: v for k, v in (await self.replica_counts(s)).items() if k in STREAMS} for s in self.servers]
            if all(v == views[0] for v in views) and set(STREAMS) == set(views[0]):
                return views[0]
            if time.monotonic() > deadline:
                raise AssertionError(f"replicas differ after {timeout}s: {views}")
            await asyncio.sleep(0.3)


@pytest.fixture
async def cluster(tmp_path, monkeypatch):
    cluster = Cluster(tmp_path)
    for key, value in cluster.env().items():
        monkeypatch.setenv(key, value)
    # The services' apps read this like a deployment would (ZocratesSettings); the harness
    # passes the gateway's own `stream_replicas=3`.
    monkeypatch.setenv("ZOCRATES_STREAM_REPLICAS", "3")
    for server in cluster.servers:
        server.start()
    try:
        await cluster.wait_healthy()
        yield cluster
    finally:
        for server in cluster.servers:
            server.stop()


@contextlib.contextmanager
def caddy_proxy(port: int, upstreams: list[str]):
    """The shipped Caddyfile on a plain-HTTP loopback address, in front of the gateways."""
    caddy = Path(sys.executable).parent / "caddy"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
        "XDG_DATA_HOME": os.environ.get("TMPDIR", "/tmp"),
        "XDG_CONFIG_HOME": os.environ.get("TMPDIR", "/tmp"),
        "PROXY_DOMAIN": f"http://127.0.0.1:{port}",
        "ZOCRATES_UPSTREAMS": " ".join(upstreams),
    }
    process = subprocess.Popen(
        [str(caddy), "run", "--adapter", "caddyfile", "--config", str(CADDYFILE)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


async def wait_http(url: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient() as client:
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(f"{url}/health")).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not answer /health in {timeout}s")
            await asyncio.sleep(0.1)


async def turn(client: httpx.AsyncClient, url: str, token: str, message: str) -> dict:
    """One turn through the proxy: its final event, or the transport failure."""
    started = time.monotonic()
    try:
        async with client.stream(
            "POST", f"{url}/chat", json={"message": message}, headers={"Authorization": f"Bearer {token}"}
        ) as response:
            if response.status_code != 200:  # refused before it started: a JSON error like any other
                await response.aread()
                error = response.json().get("error") if "json" in response.headers.get("content-type", "") else None
                return {"outcome": f"http {response.status_code}", "data": error, "seconds": time.monotonic() - started}
            events = parse_sse((await response.aread()).decode())
    except httpx.HTTPError as exc:
        return {"outcome": f"transport {type(exc).__name__}", "seconds": time.monotonic() - started}
    last = events[-1] if events else {"event": "none", "data": None}
    first = events[0]["data"] if events and events[0]["event"] == "turn" else {}
    return {
        "outcome": last["event"],
        "data": last["data"],
        "turn_id": first.get("turn_id"),
        "session_id": first.get("session_id"),
        "seconds": time.monotonic() - started,
    }


async def wave(client, url, token, n: int, label: str, kill=None, kill_after: float = 0.4) -> list[dict]:
    """`n` concurrent turns; `kill()` runs while they are in flight."""
    tasks = [
        asyncio.create_task(turn(client, url, token, f"What does my library say about RAG? ({label} {i})"))
        for i in range(n)
    ]
    if kill is not None:
        await asyncio.sleep(kill_after)
        await kill()
    return await asyncio.gather(*tasks)


async def test_turns_survive_losing_a_nats_node_and_nothing_stored_is_lost(cluster, capsys):
    fast = dict(
        stream_replicas=3,
        retrieval_timeout_s=6.0,
        verification_timeout_s=3.0,
        verification_budget_s=5.0,
        keepalive_s=1.0,
    )
    async with running_system(cluster.url, **fast) as one, running_system(cluster.url, **fast) as two:
        for system in (one, two):  # turns stay in flight for a while: the kill lands mid-turn
            system.retrieval.delay = 0.6
            system.verifier.delay = 0.3
        js = one.app.state.gateway.broker.config.connection_state.stream
        info = await js.stream_info("ZOCRATES")
        assert info.config.num_replicas == 3 and len(info.cluster.replicas) == 2
        assert (await js.stream_info("KV_zocrates_sessions")).config.num_replicas == 3
        await wait_stream_leaders(js)

        proxy_port = free_port()
        upstreams = [f"127.0.0.1:{s.url.rsplit(':', 1)[1]}" for s in (one, two)]
        with caddy_proxy(proxy_port, upstreams) as url:
            await wait_http(url)
            token = one.token  # tokens live in the replicated KV: valid on either gateway
            figures: dict = {"kills": []}
            async with httpx.AsyncClient(timeout=60) as client:
                results = await wave(client, url, token, 6, "warm-up")
                assert all(r["outcome"] == "done" for r in results), results

                recovery: list[asyncio.Task] = []

                async def leaders_back(killed_at: float) -> None:
                    await wait_stream_leaders(js, all_current=False)
                    figures.setdefault("leaders_back_after_s", []).append(round(time.monotonic() - killed_at, 2))

                async def kill_stream_leader():
                    leader = (await js.stream_info("ZOCRATES")).cluster.leader
                    cluster.by_name(leader).kill()
                    recovery.append(asyncio.create_task(leaders_back(time.monotonic())))
                    figures["kills"].append(f"{leader} (ZOCRATES stream leader)")

                async def kill_gateway_server():
                    connected = one.app.state.gateway.broker.connection.connected_url
                    victim = cluster.by_port(connected.port)
                    victim.kill()
                    recovery.append(asyncio.create_task(leaders_back(time.monotonic())))
                    figures["kills"].append(f"{victim.server_name} (gateway one's server)")

                completed, failed, retried = [*results], [], []
                for kill, label in ((kill_stream_leader, "kill-1"), (kill_gateway_server, "kill-2")):
                    resolved_before = await resolved_count(js)
                    results = await wave(client, url, token, 12, label, kill=kill)
                    for r in results:
                        (completed if r["outcome"] == "done" else failed).append(r)
                    # every stream has a leader again (how long that took is a figure)
                    await recovery[-1]
                    # a turn that ended with an error is retried once, the way a user would
                    for r in [r for r in results if r["outcome"] != "done"]:
                        again = await turn(client, url, token, "retry after a NATS node was lost")
                        retried.append(again)
                        assert again["outcome"] == "done", again
                        completed.append(again)
                    # while the server is down: two of three still take every write
                    during = await wave(client, url, token, 6, f"{label}-degraded")
                    assert all(r["outcome"] == "done" for r in during), during
                    completed += during
                    # nothing acked before the kill is gone
                    assert await resolved_count(js) >= resolved_before
                    down = next(s for s in cluster.servers if s.process.poll() is not None)
                    down.start()
                    await cluster.wait_healthy([down])
                    await wait_stream_leaders(js)

                # every failure was a clear error, never a hang or a broken stream: an error event,
                # or a 503 with its JSON body when the stores stayed out of reach past their retries
                for r in failed:
                    assert r["outcome"] in ("error", "http 503") and r["data"]["code"] and r["data"]["message"], r

                # nothing stored is lost: each completed turn is in its session, in KV ...
                for r in completed:
                    session = (
                        await client.get(
                            f"{url}/sessions/{r['session_id']}", headers={"Authorization": f"Bearer {token}"}
                        )
                    ).json()
                    assert r["turn_id"] in [t["turn_id"] for t in session["turns"]], r
                # ... and in the audit stream (a TurnResolved for every completed turn) ...
                resolved = await resolved_count(js)
                assert resolved >= len(completed)
                # ... and every replica of every stream and bucket holds the same messages.
                replicas = await cluster.wait_replicas_equal()

        figures |= {
            "turns": len(completed) + len(failed),
            "completed": len(completed),
            "ended_with_error": len(failed),
            "errors": sorted({f"{r['data']['code']}: {r['data']['message']}" for r in failed}),
            "retried_ok": sum(r["outcome"] == "done" for r in retried),
            "slowest_turn_s": round(max(r["seconds"] for r in completed + failed), 2),
            "turn_resolved_in_audit": resolved,
            "replica_messages": replicas,
        }
        with capsys.disabled():
            print(f"\ncluster rehearsal: {figures}")


async def wait_stream_leaders(js, timeout: float = 60.0, *, all_current: bool = True) -> None:
    """Until every stream and bucket has a leader (and, unless degraded, two current followers).

    A stream just created or just updated to R3, or one whose leader was killed, refuses
    writes until its Raft group has elected a leader; a rejoining server must also catch up.
    On a loaded two-core machine that has taken over 30 s, hence the generous deadline."""
    deadline = time.monotonic() + timeout
    waiting: dict[str, str] = {}
    while True:
        waiting = {}
        for name in STREAMS:
            try:
                info = await js.stream_info(name)
            except Exception as exc:  # noqa: BLE001 - not ready yet: no leader, or the client reconnecting
                waiting[name] = type(exc).__name__
                continue
            cluster = info.cluster
            if not (cluster and cluster.leader):
                waiting[name] = "no leader"
            elif all_current and not (len(cluster.replicas or []) == 2 and all(r.current for r in cluster.replicas)):
                waiting[name] = f"replicas {[(r.name, r.current) for r in cluster.replicas or []]}"
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"streams not ready after {timeout}s: {waiting}")
        await asyncio.sleep(0.2)


async def resolved_count(js) -> int:
    info = await js.stream_info("ZOCRATES", subjects_filter="zocrates.turn.resolved")
    return sum((info.state.subjects or {}).values())
