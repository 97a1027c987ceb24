"""The micro-batcher's promises (RELIABILITY.md R-GPU-1..4), with a CPU nn.Linear model."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
import torch

from harness.waiting import Gate, wait_until
from zocrates_verifier.adapters.backends.base import (
    DeadlineExceeded,
    NotAvailable,
    Overloaded,
    PredictFailed,
)
from zocrates_verifier.domain.batcher import MicroBatcher


class LinearModel:
    """f(x) = sigmoid(w . x) over a padded batch, one forward pass per call (records calls)."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(64, 1)
        self.calls: list[list[list[float]]] = []
        self.lock = threading.Lock()

    def own(self, x: list[float]) -> float:
        with torch.inference_mode():
            padded = torch.zeros(1, 64)
            padded[0, : len(x)] = torch.tensor(x)
            return torch.sigmoid(self.layer(padded))[0, 0].item()

    def predict(self, items: list[list[float]]) -> list[float]:
        with self.lock:
            self.calls.append(items)
        batch = torch.zeros(len(items), 64)  # zero padding changes nothing for a linear map
        for i, x in enumerate(items):
            batch[i, : len(x)] = torch.tensor(x)
        with torch.inference_mode():
            return torch.sigmoid(self.layer(batch))[:, 0].tolist()


def make(model, **options) -> MicroBatcher:
    options = {"max_batch_tokens": 2048, "max_batch_items": 64, "max_wait_s": 0.002, **options}
    return MicroBatcher(model.predict, len, **options)


@pytest.mark.parametrize("callers", [1, 7, 64, 512])
async def test_each_caller_gets_its_own_results_in_order_under_concurrency(callers):
    model = LinearModel()
    batcher = make(model)
    rng = random.Random(callers)
    requests = [
        [[rng.uniform(-1, 1) for _ in range(rng.randint(1, 64))] for _ in range(rng.randint(1, 6))]
        for _ in range(callers)
    ]

    async def call(items):
        await asyncio.sleep(rng.random() * 0.01)
        return await batcher.submit(items)

    results = await asyncio.gather(*(call(r) for r in requests))
    mismatches = sum(
        abs(got - model.own(x)) > 1e-5 for request, result in zip(requests, results) for x, got in zip(request, result)
    )
    assert [len(r) for r in results] == [len(r) for r in requests]
    assert mismatches == 0
    if callers >= 64:  # concurrency actually merged callers into shared forward passes
        assert batcher.stats.mean_batch_size > 2
    assert max(len(c) for c in model.calls) <= 64
    assert all(len(c) * max(len(x) for x in c) <= 2048 or len(c) == 1 for c in model.calls)
    await batcher.close()


async def test_batches_are_sorted_by_length():
    model = LinearModel()
    batcher = make(model, max_wait_s=0.05)
    await batcher.submit([[0.1] * n for n in (9, 2, 30, 5, 17)])
    assert [len(x) for x in model.calls[0]] == [2, 5, 9, 17, 30]
    await batcher.close()


async def test_poisoned_item_fails_alone_and_every_future_resolves():
    model = LinearModel()
    poison = [-13.0]  # no good item equals it

    def predict(items):
        if poison in items:
            raise ValueError("poisoned input")
        return model.predict(items)

    batcher = MicroBatcher(predict, len, max_batch_tokens=4096, max_wait_s=0.02)
    good = [[[0.5 * i]] for i in range(31)]
    requests = good[:15] + [[poison]] + good[15:]
    results = await asyncio.wait_for(asyncio.gather(*(batcher.submit(r) for r in requests)), timeout=5)
    failed = [r[0] for r in results if not isinstance(r[0], float)]
    assert len(failed) == 1 and isinstance(failed[0], PredictFailed)
    assert "poisoned input" in str(failed[0])
    assert isinstance(results[15][0], PredictFailed)
    assert all(isinstance(r[0], float) for i, r in enumerate(results) if i != 15)
    assert batcher.stats.bisections >= 1
    await batcher.close()


async def test_expired_deadline_never_reaches_the_model():
    model = LinearModel()
    gate = Gate()

    def slow_predict(items):
        gate.wait(5)
        return model.predict(items)

    batcher = MicroBatcher(slow_predict, len, max_wait_s=0.0)
    blocker = asyncio.create_task(batcher.submit([[1.0]]))
    await gate.reached()  # the model is now busy with the blocker
    doomed = [[9.0], [9.5]]
    deadline = time.monotonic() + 0.05
    expiring = asyncio.create_task(batcher.submit(doomed, deadline=deadline))
    already = await batcher.submit([[8.0]], deadline=time.monotonic() - 1)
    await wait_until(
        lambda: batcher.queued == 2 and time.monotonic() > deadline, what="the doomed pairs queued, expired"
    )
    gate.set()
    outcomes = await expiring
    await blocker
    assert all(isinstance(o, DeadlineExceeded) for o in outcomes)
    assert isinstance(already[0], DeadlineExceeded)
    seen = [x for call in model.calls for x in call]
    assert [9.0] not in seen and [9.5] not in seen and [8.0] not in seen
    assert batcher.stats.expired == 3
    await batcher.close()


async def test_simulated_out_of_memory_splits_and_serves_everything():
    model = LinearModel()
    sizes = []

    def predict(items):
        sizes.append(len(items))
        if len(items) > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return model.predict(items)

    emptied = []
    batcher = MicroBatcher(predict, len, max_wait_s=0.05, on_out_of_memory=lambda: emptied.append(1))
    items = [[0.01 * i] for i in range(20)]
    outcomes = await batcher.submit(items)
    assert all(isinstance(o, float) for o in outcomes)
    assert [round(o, 6) for o in outcomes] == [round(model.own(x), 6) for x in items]
    assert sizes[0] == 20 and max(s for s in sizes if s <= 4) <= 4
    assert batcher.stats.oom_splits >= 1 and emptied
    await batcher.close()


async def test_full_queue_is_an_explicit_overload_signal():
    model = LinearModel()
    gate = Gate()
    batcher = MicroBatcher(
        lambda items: (gate.wait(5), model.predict(items))[1], len, max_wait_s=0.0, max_queue_items=8
    )
    first = asyncio.create_task(batcher.submit([[1.0]]))
    await gate.reached()
    queued = asyncio.create_task(batcher.submit([[2.0]] * 6))
    await wait_until(lambda: batcher.queued == 6, what="six pairs queued behind the first")
    with pytest.raises(Overloaded) as refused:
        await batcher.submit([[3.0]] * 3)
    assert refused.value.retry_after_s >= 1
    gate.set()
    assert all(isinstance(o, float) for o in await queued + await first)
    assert batcher.stats.rejected == 3
    await batcher.close()


async def test_non_probability_output_fails_only_that_item():
    batcher = MicroBatcher(lambda items: [float("nan") if x == [0.0] else 0.5 for x in items], len, max_wait_s=0.02)
    outcomes = await asyncio.gather(batcher.submit([[0.0]]), batcher.submit([[1.0]]))
    assert isinstance(outcomes[0][0], PredictFailed) and outcomes[1] == [0.5]
    await batcher.close()


async def test_close_answers_waiting_callers_and_refuses_new_work():
    gate = Gate()
    batcher = MicroBatcher(lambda items: (gate.wait(5), [0.5] * len(items))[1], len, max_wait_s=0.0)
    running = asyncio.create_task(batcher.submit([[1.0]]))
    await gate.reached()
    waiting = asyncio.create_task(batcher.submit([[2.0]]))
    await wait_until(lambda: batcher.queued == 1, what="a caller waiting")
    await batcher.close()
    gate.set()
    assert isinstance((await waiting)[0], NotAvailable)
    with pytest.raises(NotAvailable):
        await batcher.submit([[3.0]])
    running.cancel()


async def test_cancelled_caller_does_not_reach_the_model():
    model = LinearModel()
    gate = Gate()
    batcher = MicroBatcher(lambda items: (gate.wait(5), model.predict(items))[1], len, max_wait_s=0.0)
    first = asyncio.create_task(batcher.submit([[1.0]]))
    await gate.reached()
    gone = asyncio.create_task(batcher.submit([[7.0]]))
    await wait_until(lambda: batcher.queued == 1, what="the caller queued")
    gone.cancel()
    gate.set()
    await first
    await batcher.submit([[2.0]])
    assert [7.0] not in [x for call in model.calls for x in call]
    await batcher.close()
