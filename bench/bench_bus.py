"""Bus overhead of whole turns with instant backends (the foundation's benchmark).

A real nats-server, the real gateway over real HTTP on loopback, the real bus apps of the
services with instant fake domains (tests/harness/system.py), so what is measured is the
system's own cost per turn: HTTP + SSE, five JetStream publishes and two request/reply
round trips, KV persistence, claim extraction and citation resolution.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from harness.system import running_system  # noqa: E402
from zocrates_runtime.natsserver import NatsServer  # noqa: E402

QUESTION = "What was the somatic mutation rate estimated from twins?"
SEQUENTIAL = 200
CONCURRENT_SESSIONS = 16
TURNS_PER_SESSION = 8


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


async def measure() -> dict:
    with tempfile.TemporaryDirectory() as tmp, NatsServer(Path(tmp) / "js") as server:
        async with running_system(server.url) as system:
            for _ in range(10):  # warm-up: connections, consumers, imports
                await system.chat(QUESTION)
            latencies = []
            for _ in range(SEQUENTIAL):
                started = time.perf_counter()
                events = await system.chat(QUESTION)
                latencies.append((time.perf_counter() - started) * 1000)
                assert events[-1]["event"] == "done"

            async def session() -> None:
                session_id = None
                for _ in range(TURNS_PER_SESSION):
                    events = await system.chat(QUESTION, session_id=session_id)
                    assert events[-1]["event"] == "done"
                    session_id = events[-1]["data"]["session_id"]

            started = time.perf_counter()
            await asyncio.gather(*(session() for _ in range(CONCURRENT_SESSIONS)))
            elapsed = time.perf_counter() - started
    return {
        "p50": statistics.median(latencies),
        "p99": pct(latencies, 0.99),
        "p95": pct(latencies, 0.95),
        "tps": CONCURRENT_SESSIONS * TURNS_PER_SESSION / elapsed,
    }


def run() -> str:
    from zocrates_runtime.logging import configure_logging

    configure_logging("bench", level="WARNING")
    r = asyncio.run(measure())
    ok50, ok99 = r["p50"] < 15, r["p99"] < 50
    return f"""## Bus overhead of one turn (foundation)

Command: `make bench` (or `.venv/bin/python -m bench bus`). A real nats-server from the wheel,
the gateway over HTTP on loopback, the services' real bus apps with instant fake domains;
a library turn (retrieval, extractive synthesis, claim extraction, verification, resolution,
KV persistence, SSE) from `POST /chat` to the `done` event.

| measure | value | target |
| --- | --- | --- |
| turn latency p50, {SEQUENTIAL} sequential turns | {r['p50']:.1f} ms | < 15 ms {'(met)' if ok50 else '(MISSED)'} |
| turn latency p95 | {r['p95']:.1f} ms | |
| turn latency p99 | {r['p99']:.1f} ms | < 50 ms {'(met)' if ok99 else '(MISSED)'} |
| throughput, {CONCURRENT_SESSIONS} concurrent sessions x {TURNS_PER_SESSION} turns | {r['tps']:.0f} turns/s | |
"""
