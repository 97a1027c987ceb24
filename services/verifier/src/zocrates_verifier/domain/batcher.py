"""Dynamic micro-batching: pairs from every concurrent request share forward passes.

Stages, as in LitServe and infinity: callers `submit` items (decode happened before); one
worker task forms a batch (`_take`), sorts it by length, runs `predict` once on a dedicated
thread (the model's only thread, so the device sees one stream of work), and routes each
result back to the future of the item it belongs to (unbatch).

Promises (RELIABILITY.md section 8, tests R-GPU-1..4):
- every submitted item's future is resolved exactly once, with its own result or an error;
- an item past its deadline is answered `DeadlineExceeded` and never reaches `predict`
  (checked when the batch forms and again right before each forward pass);
- a failing batch is bisected until the failing item is alone, so one poisoned input fails
  only itself; an out-of-memory error splits the batch and retries the halves;
- a full queue refuses new work with `Overloaded` (an explicit signal, never an unbounded
  queue); a dead worker fails every waiting caller at once and refuses new work.

A batch closes when its padded size (pairs x longest pair, what the model really computes)
would pass `max_batch_tokens`, at `max_batch_items`, or when the oldest queued item has waited
`max_wait_s`, whichever comes first. While the model is busy, arrivals queue up, so batches
grow with load on their own.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from zocrates_verifier.adapters.backends.base import (
    DeadlineExceeded,
    NotAvailable,
    Outcome,
    Overloaded,
    PredictFailed,
)

T = TypeVar("T")


def is_out_of_memory(exc: BaseException) -> bool:
    """True for an accelerator out-of-memory error (CUDA, MPS, XPU) or a host MemoryError."""
    if isinstance(exc, MemoryError):
        return True
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except (ImportError, AttributeError):
        pass
    return "out of memory" in str(exc).lower()


@dataclass(slots=True)
class _Item(Generic[T]):
    payload: T
    cost: int
    deadline: float | None
    future: asyncio.Future
    enqueued: float

    def expired(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline

    def resolve(self, outcome: Outcome) -> None:
        if not self.future.done():  # a cancelled caller's future stays cancelled
            self.future.set_result(outcome)


@dataclass
class BatcherStats:
    """Counters for /health, metrics and tests."""

    submitted: int = 0
    batches: int = 0
    forward_passes: int = 0
    items_predicted: int = 0
    expired: int = 0
    rejected: int = 0
    failed: int = 0
    oom_splits: int = 0
    bisections: int = 0
    largest_batch: int = 0
    recent_rate: float = 0.0  # items per second of model time, smoothed
    batch_sizes: list[int] = field(default_factory=list)

    @property
    def mean_batch_size(self) -> float:
        return self.items_predicted / self.forward_passes if self.forward_passes else 0.0


class MicroBatcher(Generic[T]):
    """Queue items from all callers and run them through `predict` in dynamic batches."""

    def __init__(
        self,
        predict: Callable[[list[T]], Sequence[float]],
        cost: Callable[[T], int],
        *,
        max_batch_tokens: int = 16_384,
        max_batch_items: int = 128,
        max_wait_s: float = 0.005,
        max_queue_items: int = 4096,
        on_out_of_memory: Callable[[], None] | None = None,
    ) -> None:
        self._predict = predict
        self._cost = cost
        self.max_batch_tokens = max_batch_tokens
        self.max_batch_items = max_batch_items
        self.max_wait_s = max_wait_s
        self.max_queue_items = max_queue_items
        self._on_oom = on_out_of_memory
        self._queue: deque[_Item[T]] = deque()
        self._arrived = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verifier-model")
        self._worker: asyncio.Task | None = None
        self._dead: BaseException | None = None
        self.stats = BatcherStats()

    # --- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._run(), name="batcher")
            self._worker.add_done_callback(self._worker_ended)

    async def close(self) -> None:
        """Stop the worker; every waiting caller gets `NotAvailable`."""
        self._dead = self._dead or NotAvailable("the verifier is shutting down")
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
        self._fail_all(self._dead)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _worker_ended(self, task: asyncio.Task) -> None:
        # Worker death fails fast: nobody is left waiting for a batch that will never run.
        if not task.cancelled() and task.exception() is not None:
            self._dead = NotAvailable(f"the batch worker died: {task.exception()!r}")
        self._dead = self._dead or NotAvailable("the batch worker stopped")
        self._fail_all(self._dead)

    def _fail_all(self, error: BaseException) -> None:
        while self._queue:
            self._queue.popleft().resolve(error)  # type: ignore[arg-type]

    # --- callers ---------------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return len(self._queue)

    def retry_after_s(self) -> float:
        """A hint for refused callers: time to drain the current queue, at least 1 s."""
        rate = self.stats.recent_rate
        return max(1.0, math.ceil(len(self._queue) / rate)) if rate > 0 else 1.0

    async def submit(self, items: Sequence[T], deadline: float | None = None) -> list[Outcome]:
        """Results for `items`, in order; `deadline` is a `time.monotonic()` instant.

        Raises `Overloaded` when the queue cannot take all of `items` (none is queued then),
        and `NotAvailable` when the worker is gone.
        """
        if self._dead is not None:
            raise NotAvailable(str(self._dead))
        if self._worker is None:
            self.start()
        if len(self._queue) + len(items) > self.max_queue_items:
            self.stats.rejected += len(items)
            raise Overloaded(
                f"{len(self._queue)} pairs queued (limit {self.max_queue_items}); retry later",
                retry_after_s=self.retry_after_s(),
            )
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        if deadline is not None and now >= deadline:  # answered at once, never queued
            self.stats.expired += len(items)
            return [DeadlineExceeded("the deadline had passed on submission")] * len(items)
        queued = [_Item(item, max(1, int(self._cost(item))), deadline, loop.create_future(), now) for item in items]
        self._queue.extend(queued)
        self.stats.submitted += len(queued)
        self._arrived.set()
        try:
            return list(await asyncio.gather(*(q.future for q in queued)))
        except asyncio.CancelledError:
            for q in queued:  # a caller that left frees its slots; _take skips them
                q.future.cancel()
            raise

    # --- worker ----------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            # Wait bound: give the oldest item up to max_wait_s to gather batch-mates.
            close_at = self._queue[0].enqueued + self.max_wait_s
            while not self._batch_full() and (remaining := close_at - time.monotonic()) > 0:
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), remaining)
                except TimeoutError:
                    break
            batch = self._take()
            if batch:
                self.stats.batches += 1
                batch.sort(key=lambda item: item.cost)  # halves of a split stay length-alike
                await self._forward(batch)

    def _batch_full(self) -> bool:
        longest, n = 0, 0
        for item in self._queue:
            longest, n = max(longest, item.cost), n + 1
            if n >= self.max_batch_items or n * longest >= self.max_batch_tokens:
                return True
        return False

    def _take(self) -> list[_Item[T]]:
        """Pop the next batch in arrival order, answering expired and abandoned items."""
        now = time.monotonic()
        batch: list[_Item[T]] = []
        longest = 0
        while self._queue and len(batch) < self.max_batch_items:
            item = self._queue[0]
            if item.future.done():  # caller cancelled
                self._queue.popleft()
                continue
            if item.expired(now):
                self._queue.popleft()
                self.stats.expired += 1
                item.resolve(DeadlineExceeded("the deadline passed while the pair was queued"))
                continue
            widest = max(longest, item.cost)
            if batch and (len(batch) + 1) * widest > self.max_batch_tokens:
                break  # an item wider than the budget alone still runs, alone
            batch.append(self._queue.popleft())
            longest = widest
        return batch

    async def _forward(self, items: list[_Item[T]]) -> None:
        """One forward pass over `items`; on failure, split and retry the halves."""
        now = time.monotonic()
        live = []
        for item in items:  # a retried half may have outlived its deadline meanwhile
            if item.future.done():
                continue
            if item.expired(now):
                self.stats.expired += 1
                item.resolve(DeadlineExceeded("the deadline passed before the forward pass"))
            else:
                live.append(item)
        if not live:
            return
        loop = asyncio.get_running_loop()
        started = time.monotonic()
        self.stats.forward_passes += 1
        try:
            outputs = await loop.run_in_executor(self._executor, self._predict, [item.payload for item in live])
            if len(outputs) != len(live):
                raise PredictFailed(f"predict returned {len(outputs)} results for {len(live)} pairs")
        except Exception as exc:  # noqa: BLE001 -- every item must still get an answer
            await self._recover(live, exc)
            return
        took = max(time.monotonic() - started, 1e-6)
        self.stats.recent_rate = (
            0.8 * self.stats.recent_rate + 0.2 * len(live) / took if self.stats.recent_rate else len(live) / took
        )
        self.stats.items_predicted += len(live)
        self.stats.largest_batch = max(self.stats.largest_batch, len(live))
        if len(self.stats.batch_sizes) < 10_000:
            self.stats.batch_sizes.append(len(live))
        for item, value in zip(live, outputs):
            try:
                probability = float(value)
            except (TypeError, ValueError):
                probability = math.nan
            if not 0.0 <= probability <= 1.0:  # NaN included
                self.stats.failed += 1
                item.resolve(PredictFailed(f"the model returned {value!r}, not a probability"))
            else:
                item.resolve(value if isinstance(value, float) else probability)  # a Support keeps its spans

    async def _recover(self, items: list[_Item[T]], exc: Exception) -> None:
        oom = is_out_of_memory(exc)
        if len(items) == 1:
            self.stats.failed += 1
            kind = "out of memory on a single pair" if oom else f"{type(exc).__name__}: {exc}"
            items[0].resolve(PredictFailed(f"scoring failed ({kind})"))
            return
        if oom:
            self.stats.oom_splits += 1
            if self._on_oom is not None:
                self._on_oom()  # e.g. torch.cuda.empty_cache() before the smaller retries
        else:
            self.stats.bisections += 1
        middle = len(items) // 2
        await self._forward(items[:middle])
        await self._forward(items[middle:])
