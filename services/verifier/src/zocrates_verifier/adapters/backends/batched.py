"""`BatchedBackend`: an in-process `BatchModel` behind the micro-batcher."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from zocrates_verifier.adapters.backends.base import Backend, BatchModel, Outcome, Pair
from zocrates_verifier.domain.batcher import MicroBatcher

_WARMUP = Pair(
    claim="Warm-up claim with 12 words.", source_text="A warm-up passage that states 12 words for the warm-up claim."
)


class BatchedBackend(Backend):
    """Loads `model` once on `device`, warms it up, and scores through a `MicroBatcher`."""

    def __init__(
        self, model: BatchModel, device: str, *, warmup: bool = True, cpu_threads: int = 0, **batcher_options: Any
    ) -> None:
        self._model = model
        self._cpu_threads = cpu_threads
        self.provider = model.provider
        self.model = model.model
        self.device = device
        self._warmup = warmup
        self._options = batcher_options
        self.batcher: MicroBatcher[Pair] | None = None
        self.loaded = False

    async def start(self) -> None:
        if self._cpu_threads and self.device == "cpu":
            import torch

            torch.set_num_threads(self._cpu_threads)  # process-wide, read by every thread
        # Loading weights blocks for seconds: off the event loop, once per process.
        await asyncio.to_thread(self._model.setup, self.device)
        # Where the model really landed: a loader may fall back (Laya moves to CPU when the
        # device cannot take the weights).
        self.device = getattr(self._model, "device", self.device)
        self.batcher = MicroBatcher(
            self._model.predict, self._model.cost, on_out_of_memory=self._empty_cache, **self._options
        )
        self.batcher.start()
        if self._warmup:
            await self.batcher.submit([_WARMUP, Pair(_WARMUP.claim, _WARMUP.source_text, True)])
        self.loaded = True

    def _empty_cache(self) -> None:
        if self.device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()

    async def score(self, pairs: Sequence[Pair], deadline: float | None) -> list[Outcome]:
        assert self.batcher is not None, "start() the backend first"
        return await self.batcher.submit(list(pairs), deadline)

    async def close(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()

    def calibrated_threshold(self) -> float | None:
        return self._model.calibrated_threshold

    def health(self) -> dict[str, Any]:
        stats = self.batcher.stats if self.batcher else None
        return {
            "loaded": self.loaded,
            **self._model.describe(),
            "queue": self.batcher.queued if self.batcher else 0,
            "batches": stats.forward_passes if stats else 0,
            "mean_batch_size": round(stats.mean_batch_size, 2) if stats else 0.0,
            "expired": stats.expired if stats else 0,
            "rejected": stats.rejected if stats else 0,
            "oom_splits": stats.oom_splits if stats else 0,
        }
