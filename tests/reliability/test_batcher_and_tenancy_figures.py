"""Figures for plan items whose tests live with their services: R-GPU-1..4 (the verifier's
micro-batcher, tests/verifier/test_batcher.py) and S-QD-1 (Qdrant tenancy,
tests/retrieval/test_tenancy.py). These re-run the same properties with counters, reusing
those modules' model and state machine, and publish the numbers the plan asks for."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from retrieval.test_tenancy import TenantLeakMachine
from verifier.test_batcher import LinearModel, make

from harness.waiting import Gate, wait_until
from zocrates_verifier.adapters.backends.base import DeadlineExceeded, PredictFailed
from zocrates_verifier.domain.batcher import MicroBatcher


async def test_batcher_figures_mapping_poison_deadline_and_out_of_memory(report):
    # R-GPU-1: 512 concurrent callers, each gets f(own input)
    model = LinearModel()
    batcher = make(model)
    rng = random.Random(512)
    requests = [
        [[rng.uniform(-1, 1) for _ in range(rng.randint(1, 64))] for _ in range(rng.randint(1, 6))] for _ in range(512)
    ]
    results = await asyncio.gather(*(batcher.submit(r) for r in requests))
    mismatches = sum(abs(got - model.own(x)) > 1e-5 for r, res in zip(requests, results) for x, got in zip(r, res))
    mean_batch = batcher.stats.mean_batch_size
    await batcher.close()
    report(
        "R-GPU-1",
        callers=512,
        items=sum(map(len, requests)),
        mismatches=mismatches,
        mean_batch_size=round(mean_batch, 1),
        forward_passes=len(model.calls),
    )
    assert mismatches == 0

    # R-GPU-2: one poisoned item among 31 good ones
    def predict(items):
        if [-13.0] in items:
            raise ValueError("poisoned input")
        return model.predict(items)

    batcher = MicroBatcher(predict, len, max_batch_tokens=4096, max_wait_s=0.02)
    submitted = (
        [batcher.submit([[0.5 * i]]) for i in range(15)]
        + [batcher.submit([[-13.0]])]
        + [batcher.submit([[0.5 * i]]) for i in range(15, 31)]
    )
    tasks = [asyncio.ensure_future(s) for s in submitted]
    done, pending = await asyncio.wait(tasks, timeout=5)
    outcomes = [t.result()[0] for t in done]
    collateral = sum(isinstance(o, PredictFailed) for o in outcomes) - 1
    report(
        "R-GPU-2",
        callers=32,
        unresolved_futures=len(pending),
        collateral_failures=collateral,
        bisections=batcher.stats.bisections,
    )
    await batcher.close()
    assert not pending and collateral == 0

    # R-GPU-3: requests whose deadline passes while the model is busy
    model = LinearModel()
    gate = Gate()
    batcher = MicroBatcher(lambda items: (gate.wait(5), model.predict(items))[1], len, max_wait_s=0.0)
    blocker = asyncio.create_task(batcher.submit([[1.0]]))
    await gate.reached()  # the model is busy
    deadline = time.monotonic() + 0.05
    doomed = [asyncio.create_task(batcher.submit([[9.0 + i / 10]], deadline=deadline)) for i in range(10)]
    await wait_until(lambda: batcher.queued == 10 and time.monotonic() > deadline, what="the requests queued, expired")
    gate.set()
    expired = [o for t in doomed for o in await t]
    await blocker
    reached = sum(1 for call in model.calls for x in call if x[0] >= 9.0)
    report(
        "R-GPU-3",
        expired_requests=len(doomed),
        model_calls_for_expired=reached,
        answered_deadline_exceeded=sum(isinstance(o, DeadlineExceeded) for o in expired),
    )
    await batcher.close()
    assert reached == 0

    # R-GPU-4: a simulated CUDA OOM above 4 items
    sizes = []

    def oom_predict(items):
        sizes.append(len(items))
        if len(items) > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return model.predict(items)

    batcher = MicroBatcher(oom_predict, len, max_wait_s=0.05, on_out_of_memory=lambda: None)
    served = await batcher.submit([[0.01 * i] for i in range(64)])
    report(
        "R-GPU-4",
        items=64,
        oom_splits=batcher.stats.oom_splits,
        retries=len(sizes) - 1,
        first_batch=sizes[0],
        final_batch_size=max(s for s in sizes if s <= 4),
        served=sum(isinstance(o, float) for o in served),
    )
    await batcher.close()
    assert all(isinstance(o, float) for o in served)


class CountingMachine(TenantLeakMachine):
    totals = {"runs": 0, "queries": 0, "leaks": 0}

    def teardown(self):
        CountingMachine.totals["runs"] += 1
        CountingMachine.totals["queries"] += getattr(self, "queries", 0)
        super().teardown()


@pytest.mark.fuzz
def test_tenant_leak_property_figures(report):
    CountingMachine.totals.update(runs=0, queries=0)
    run_state_machine_as_test(
        CountingMachine,
        settings=settings(
            max_examples=15, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
        ),
    )
    report(
        "S-QD-1",
        backend="edge (qdrant-edge-py)",
        machines=CountingMachine.totals["runs"],
        queries_checked=CountingMachine.totals["queries"],
        leaks=0,
        note="every query asserts hits ⊆ caller's chunks; deleting a tenant leaves the others",
    )
    assert CountingMachine.totals["queries"] > 0
