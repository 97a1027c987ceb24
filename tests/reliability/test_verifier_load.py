"""R-JS-6 and R-GPU-5: the verifier's consumer under a 10x burst, and a verifier process
killed mid-batch. Both run the real verifier bus app (zocrates_verifier.app) in its own
process with a throttled fake model (harness/slow_service.py)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta

import nats
import psutil
import pytest

from harness.processes import TESTS, kill, spawn, wait_ready
from harness.waiting import wait_until
from zocrates_contracts import VerificationPair, VerificationRequested
from zocrates_contracts.subjects import AUDIT_STREAM, VERIFIER_CONSUMER
from zocrates_gateway.config import GatewaySettings
from zocrates_runtime import bus
from zocrates_runtime.settings import ZocratesSettings
from zocrates_runtime.supervisor import Child, RestartPolicy, Supervisor

pytestmark = [pytest.mark.connected, pytest.mark.slow]
REPLY_TO = "zocrates.reply.load.verification"


def requests(n: int, pairs: int = 4, deadline=None) -> list[VerificationRequested]:
    return [
        VerificationRequested(
            turn_id=f"t{i}",
            session_id="s",
            user_id="u",
            reply_to=REPLY_TO,
            deadline=deadline,
            pairs=[
                VerificationPair(chunk_index=1, occurrence=k + 1, claim=f"claim {i}.{k}", source_text="a passage " * 40)
                for k in range(pairs)
            ],
        )
        for i in range(n)
    ]


async def publish_all(broker, messages, concurrency: int = 200) -> None:
    for start in range(0, len(messages), concurrency):
        await asyncio.gather(*(bus.publish(broker, m) for m in messages[start : start + concurrency]))


async def replies_stored(js) -> int:
    info = await js.stream_info(AUDIT_STREAM, subjects_filter=REPLY_TO)
    return sum((info.state.subjects or {}).values())


@pytest.mark.timeout(180)
async def test_burst_of_ten_times_max_ack_pending_pauses_delivery_and_drains(nats_server, report):
    broker = bus.make_broker(ZocratesSettings(nats_url=nats_server.url))
    await broker.start()
    await bus.ensure_streams(broker)
    js = broker.config.connection_state.stream
    worker = spawn("harness.slow_service", "verifier", nats_server.url, "0.05")
    try:
        await wait_ready(worker)
        process = psutil.Process(worker.pid)
        baseline_rss = process.memory_info().rss
        config = (await js.consumer_info(AUDIT_STREAM, VERIFIER_CONSUMER)).config
        burst = requests(10 * config.max_ack_pending)
        samples: list[tuple[int, int, int]] = []
        sampling = True

        async def sample() -> None:
            while sampling:
                info = await js.consumer_info(AUDIT_STREAM, VERIFIER_CONSUMER)
                samples.append((info.num_ack_pending, info.num_pending, process.memory_info().rss))
                await asyncio.sleep(0.05)

        sampler = asyncio.create_task(sample())
        started = time.monotonic()
        await publish_all(broker, burst)
        published_s = time.monotonic() - started
        await wait_until(lambda: _all_replied(js, len(burst)), 150, "every burst request answered", 0.1)
        drain_s = time.monotonic() - started
        sampling = False
        await sampler
        info = await wait_until(lambda: _drained(js), 10, "consumer drained")
        stored = await replies_stored(js)
    finally:
        kill(worker)
        await broker.stop()
    peak_ack_pending = max(s[0] for s in samples)
    peak_rss = max(s[2] for s in samples)
    report(
        "R-JS-6",
        burst=len(burst),
        max_ack_pending=config.max_ack_pending,
        max_workers=32,
        handler_delay_s=0.05,
        peak_num_ack_pending=peak_ack_pending,
        peak_num_pending=max(s[1] for s in samples),
        peak_rss_mb=round(peak_rss / 2**20, 1),
        rss_growth_mb=round((peak_rss - baseline_rss) / 2**20, 1),
        publish_s=round(published_s, 2),
        drain_s=round(drain_s, 2),
        replies=stored,
        lost=len(burst) - stored,
        redelivered=info.num_redelivered,
    )
    assert stored == len(burst), "every request of the burst answered once"
    assert peak_ack_pending <= config.max_ack_pending, "delivery never exceeds MaxAckPending"
    assert (peak_rss - baseline_rss) < 256 * 2**20, "the worker's memory stays bounded under the burst"


async def _all_replied(js, n: int) -> bool:
    return await replies_stored(js) >= n


async def _drained(js):
    info = await js.consumer_info(AUDIT_STREAM, VERIFIER_CONSUMER)
    return info if info.num_pending == 0 and info.num_ack_pending == 0 else None


@pytest.mark.timeout(180)
async def test_verifier_process_killed_mid_batch_is_restarted_and_loses_no_job(nats_server, report):
    jobs = 200
    broker = bus.make_broker(ZocratesSettings(nats_url=nats_server.url))
    await broker.start()
    await bus.ensure_streams(broker)
    js = broker.config.connection_state.stream
    output = io.StringIO()
    supervisor = supervised_verifier(nats_server.url, output)
    running = asyncio.create_task(supervisor.run())
    try:
        await wait_until(lambda: output.getvalue().count("[verifier] ready") == 1, 30, "the verifier")
        first_pid = supervisor.pids["verifier"]
        await publish_all(broker, requests(jobs))

        async def mid_batch():
            info = await js.consumer_info(AUDIT_STREAM, VERIFIER_CONSUMER)
            return info.num_ack_pending >= 32  # a full round of requests is in the model

        await wait_until(mid_batch, 30, "requests in flight")
        answered_before = await replies_stored(js)
        os.kill(first_pid, signal.SIGKILL)
        killed = time.monotonic()
        await wait_until(lambda: output.getvalue().count("[verifier] ready") == 2, 30, "the restart")
        restart_s = time.monotonic() - killed
        assert supervisor.pids["verifier"] != first_pid
        await wait_until(lambda: _all_replied(js, jobs), 120, "every job answered", 0.2)
        recovered_s = time.monotonic() - killed
        info = await wait_until(lambda: _drained(js), 10, "consumer drained")
        stored = await replies_stored(js)
    finally:
        supervisor.stop()
        await asyncio.wait_for(running, 30)
        await broker.stop()
    ack_wait = info.config.ack_wait
    report(
        "R-GPU-5",
        jobs=jobs,
        answered_before_kill=answered_before,
        in_flight_at_kill=">=32",
        restart_s=round(restart_s, 2),
        all_answered_after_kill_s=round(recovered_s, 1),
        ack_wait_s=ack_wait,
        replies=stored,
        lost=jobs - stored,
        restarts=supervisor.children["verifier"].starts - 1,
    )
    assert stored == jobs, "every job answered once, the killed batch after its redelivery"
    assert supervisor.children["verifier"].starts == 2


def supervised_verifier(nats_url: str, output: io.StringIO) -> Supervisor:
    """The verifier worker (1 s fake model) under the supervisor, restarted 0.2 s after it dies."""
    env = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return Supervisor(
        [Child("verifier", [sys.executable, "-m", "harness.slow_service", "verifier", nats_url, "1.0"], env=env)],
        policy=RestartPolicy(initial_delay=0.2),
        output=output,
    )


@pytest.mark.timeout(120)
async def test_regression_killed_verifiers_batch_is_answered_within_the_verification_timeout(nats_server, report):
    """A full round of jobs, each with the deadline the gateway gives it (its verification
    timeout), in the model when the verifier is SIGKILLed: redelivered to the restarted
    process after the verifier's AckWait and answered before that deadline, while the turns
    still wait. Was: AckWait 30 s, the jobs came back after their deadline and were dropped as
    expired, so every one of those turns failed open (citations kept unverified)."""
    gateway = GatewaySettings()
    timeout = min(gateway.verification_timeout_s, gateway.verification_budget_s)  # as turn.verify
    jobs = 32  # the verifier's max_workers: one full round in the model
    broker = bus.make_broker(ZocratesSettings(nats_url=nats_server.url))
    await broker.start()
    await bus.ensure_streams(broker)
    js = broker.config.connection_state.stream
    answered: dict[str, float] = {}
    watcher = await nats.connect(nats_server.url)

    async def on_reply(msg) -> None:
        answered.setdefault(json.loads(msg.data)["turn_id"], time.monotonic())

    await watcher.subscribe(REPLY_TO, cb=on_reply)
    output = io.StringIO()
    supervisor = supervised_verifier(nats_server.url, output)
    running = asyncio.create_task(supervisor.run())
    try:
        await wait_until(lambda: output.getvalue().count("[verifier] ready") == 1, 30, "the verifier")
        first_pid = supervisor.pids["verifier"]
        published = time.monotonic()
        await publish_all(broker, requests(jobs, deadline=datetime.now(UTC) + timedelta(seconds=timeout)))

        async def all_in_the_model():
            return (await js.consumer_info(AUDIT_STREAM, VERIFIER_CONSUMER)).num_ack_pending >= jobs

        await wait_until(all_in_the_model, 10, "the round in the model")
        os.kill(first_pid, signal.SIGKILL)
        killed = time.monotonic()
        answered_before_kill = len(answered)
        await wait_until(lambda: output.getvalue().count("[verifier] ready") == 2, 30, "the restart")
        restart_s = time.monotonic() - killed
        try:
            await wait_until(lambda: len(answered) == jobs, timeout + 20, "every job answered", 0.05)
        except AssertionError:
            pass  # the figures say how many made it
        info = await js.consumer_info(AUDIT_STREAM, VERIFIER_CONSUMER)
    finally:
        supervisor.stop()
        await asyncio.wait_for(running, 30)
        await watcher.close()
        await broker.stop()
    deadline = published + timeout
    after_kill = sorted(t - killed for t in answered.values() if t > killed)
    in_time = sum(t <= deadline for t in answered.values())
    report(
        "R-GPU-5-redelivery",
        jobs=jobs,
        ack_wait_s=info.config.ack_wait,
        request_timeout_s=timeout,
        turn_budget_s=gateway.verification_budget_s,
        killed_after_publish_s=round(killed - published, 2),
        answered_before_kill=answered_before_kill,
        restart_s=round(restart_s, 2),
        kill_to_first_redelivered_answer_s=round(after_kill[0], 2) if after_kill else None,
        kill_to_last_answer_s=round(after_kill[-1], 2) if after_kill else None,
        answered=len(answered),
        answered_before_deadline=in_time,
    )
    assert in_time == jobs, f"{jobs - in_time} of {jobs} killed jobs not answered before their deadline"
