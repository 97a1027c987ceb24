"""Turns on an idle stack: questions asked at random gaps, as a person asks them.

`python -m zocrates_runtime.stack` (what `make run` starts: the real nats-server, the five
services as processes on their offline defaults) over the small library of the answer
benchmark (tests/harness/answer_library.py), no LLM and the default verifier. After a warm-up,
`TURNS` library questions are posted to `POST /chat`, each after a pause drawn uniformly from
0 to `MAX_GAP_S` seconds (seeded), and timed client-side from the POST to the `done` event.
Back-to-back turns (bench_bus) never see what an idle stack does between questions: request
consumers' pull requests expiring and being renewed, every few seconds.

A plain NATS subscriber on `zocrates.>` timestamps each request and its reply as the bus
carries them, so a slow turn says which request held the time (request published to reply
published), not only that it was slow.

`ZOCRATES_BENCH_IDLE_MAX_GAP_S` (default 20) and `ZOCRATES_BENCH_IDLE_TURNS` (default 40)
shorten a quick run; what is written to docs/benchmarks.md says which were used.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx  # noqa: E402
import nats  # noqa: E402

from bench.bench_answers import FIXTURES, StackError, running_stack  # noqa: E402

SEED = 14
TURNS = int(os.environ.get("ZOCRATES_BENCH_IDLE_TURNS", "40"))
MAX_GAP_S = float(os.environ.get("ZOCRATES_BENCH_IDLE_MAX_GAP_S", "20"))
#: p99 may exceed the median by this much and no more: what a stall would break.
TARGET_SPREAD_MS = 100.0
QUESTIONS = (
    "What complications of deep venous thrombosis prophylaxis were reported in trauma patients?",
    "What barriers to quality improvement were found at Kamuzu Central Hospital?",
    "How was the quality of care assessed in the hospital study?",
)
WARM_UP = 3
#: Measured with the same command, seed and gaps before request consumers fetched one message
#: per pull (zocrates_runtime.bus.FETCH_BATCH); kept so the section shows what changed.
BEFORE = """

Before request consumers fetched one message per pull request (they fetched batches of
`max_workers`), same command, seed and gaps: p50 104.3 ms, p90 178.2 ms, p99 3791.7 ms, max
3791.7 ms; 3 of 40 turns over p50 + 100 ms (1392, 2482 and 3792 ms), the slowest with retrieval
28 ms and verification 3716 ms from request to reply on the bus: the request waited in the
verifier's consumer, not in its handler (tests/bus/test_no_stall.py reproduces the wait)."""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class BusClock:
    """When each request and reply of a turn crossed the bus, by turn id (perf_counter s)."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[float, str]]] = defaultdict(list)

    async def on_message(self, msg) -> None:
        at = time.perf_counter()
        try:
            turn_id = json.loads(msg.data).get("turn_id")
        except (ValueError, AttributeError):
            return
        if turn_id:
            self.seen[turn_id].append((at, msg.subject))

    def hops(self, turn_id: str) -> list[tuple[str, float]]:
        """(request kind, ms from its request to its reply on the bus), in the turn's order."""
        out, asked = [], {}
        for at, subject in self.seen.get(turn_id, []):
            parts = subject.split(".")
            if parts[-1] == "requested" and parts[1] != "turn":
                asked[parts[1]] = at
            elif parts[1] == "reply" and parts[-1] in asked:
                out.append((parts[-1], (at - asked.pop(parts[-1])) * 1000))
        return out


async def ask(client: httpx.AsyncClient, url: str, token: str, message: str) -> tuple[str, float]:
    """One turn: (its turn id, ms from the POST to the `done` event)."""
    from harness.system import parse_sse

    started = time.perf_counter()
    async with client.stream(
        "POST", f"{url}/chat", json={"message": message}, headers={"Authorization": f"Bearer {token}"}
    ) as response:
        if response.status_code != 200:
            body = (await response.aread())[:300]
            raise StackError(f"POST /chat answered {response.status_code}: {body!r}")
        text = "".join([chunk async for chunk in response.aiter_text()])
    ms = (time.perf_counter() - started) * 1000
    events = parse_sse(text)
    if not events or events[-1]["event"] != "done":
        raise StackError(f"the turn did not end with `done`: {events[-1:]}")
    return events[0]["data"]["turn_id"], ms


async def measure(url: str, token: str, nats_url: str) -> dict:
    rng = random.Random(SEED)
    clock = BusClock()
    nc = await nats.connect(nats_url)
    await nc.subscribe("zocrates.>", cb=clock.on_message)
    turns = []
    try:
        async with httpx.AsyncClient(timeout=120) as client:
            for i in range(WARM_UP):
                await ask(client, url, token, QUESTIONS[i % len(QUESTIONS)])
            for _ in range(TURNS):
                gap = rng.uniform(0, MAX_GAP_S)
                await asyncio.sleep(gap)
                turn_id, ms = await ask(client, url, token, rng.choice(QUESTIONS))
                turns.append({"gap_s": gap, "ms": ms, "turn_id": turn_id})
                print(f"  after {gap:4.1f} s idle: {ms:7.1f} ms", flush=True)
        await asyncio.sleep(0.2)  # the last replies' copies reach the clock
    finally:
        await nc.close()
    for turn in turns:
        turn["hops"] = clock.hops(turn["turn_id"])
    return {"turns": turns}


def figures(turns: list[dict]) -> dict:
    ms = [t["ms"] for t in turns]
    p50 = statistics.median(ms)
    return {
        "p50": p50,
        "p90": pct(ms, 0.90),
        "p99": pct(ms, 0.99),
        "max": max(ms),
        "over": sum(m > p50 + TARGET_SPREAD_MS for m in ms),
    }


def _nats_url(work: Path) -> str:
    log = (work / "stack.log").read_text(errors="replace")
    found = re.search(r"nats-server ready on (nats://[\d.:]+)", log)
    if not found:
        raise StackError("the stack's log does not say where nats-server listens")
    return found.group(1)


def run() -> str:
    from harness.answer_library import PAPERS, build_answer_library

    if not FIXTURES.exists():
        raise SystemExit(f"bench idle: the fixture PDFs are not at {FIXTURES}")
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        work = Path(tmp)
        library = build_answer_library(work / "Zotero", FIXTURES)
        with running_stack(library.zotero_dir, work, len(PAPERS)) as (url, token, _status):
            result = asyncio.run(measure(url, token, _nats_url(work)))
    return section(result["turns"])


def section(turns: list[dict]) -> str:
    """The section of docs/benchmarks.md for `turns` (each: gap_s, ms, hops)."""
    f = figures(turns)
    met = f["p99"] <= f["p50"] + TARGET_SPREAD_MS
    slow = [t for t in turns if t["ms"] > f["p50"] + TARGET_SPREAD_MS]
    if slow:
        seen = (
            "Turns over p50 + 100 ms (request to reply on the bus, per request): "
            + "; ".join(f"{t['ms']:.0f} ms after {t['gap_s']:.1f} s idle ({_hops(t)})" for t in slow)
            + "."
        )
    else:
        t = max(turns, key=lambda t: t["ms"])
        seen = (
            f"No turn over p50 + 100 ms. Slowest: {t['ms']:.0f} ms after {t['gap_s']:.1f} s "
            f"idle (request to reply on the bus: {_hops(t)})."
        )
    return f"""## Turns on an idle stack (no stalls)

Command: `make bench` (or `.venv/bin/python -m bench idle`; `ZOCRATES_BENCH_IDLE_MAX_GAP_S` and
`ZOCRATES_BENCH_IDLE_TURNS` shorten it). `python -m zocrates_runtime.stack` with the real
nats-server and the services on their offline defaults over the answer benchmark's library (no
LLM, the default verifier); {WARM_UP} warm-up turns, then {len(turns)} library questions, each
after a pause drawn uniformly from 0 to {MAX_GAP_S:g} s (seed {SEED}), timed from `POST /chat`
to `done`. Request to reply times are read off the bus by a plain subscriber on `zocrates.>`.

| measure | value |
| --- | --- |
| turn latency p50 | {f['p50']:.1f} ms |
| turn latency p90 | {f['p90']:.1f} ms |
| turn latency p99 | {f['p99']:.1f} ms |
| turn latency max | {f['max']:.1f} ms |
| turns over p50 + {TARGET_SPREAD_MS:.0f} ms | {f['over']} of {len(turns)} |

Target: p99 <= p50 + {TARGET_SPREAD_MS:.0f} ms: {'met' if met else 'NOT met'}. {seen}{BEFORE}"""


def _hops(turn: dict) -> str:
    return ", ".join(f"{kind} {ms:.0f} ms" for kind, ms in turn["hops"]) or "no request seen"


if __name__ == "__main__":
    print(run())
