"""The verifier's entry point: `VerifierService` turns requests into scores.

It knows nothing about NATS or HTTP. The bus handler calls `verify` with a
`VerificationRequested` and publishes the `VerificationCompleted` it returns; the HTTP app
(`zocrates_verifier.http`) calls `score`. A backend that scores windows of the passage (the
trained model, the heuristic) also says where the passage supports the claim: each score's
`spans`. Verification fails open: a pair that could not be scored gets probability `None` (the
gateway keeps its citation) and the reply's `error` says why; nothing here raises for a
scoring failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import structlog

from zocrates_contracts import SUPPORT_THRESHOLD, ServiceError, TextSpan
from zocrates_contracts.messages import (
    MAX_UNPRINTED_NUMBERS,
    PairScore,
    VerificationCompleted,
    VerificationPair,
    VerificationRequested,
)
from zocrates_runtime.device import resolve_device
from zocrates_verifier.adapters.backends import build_backend, local_torch
from zocrates_verifier.adapters.backends.base import (
    Backend,
    DeadlineExceeded,
    NotAvailable,
    Outcome,
    Overloaded,
    Pair,
    PredictFailed,
    VerifierError,
)
from zocrates_verifier.config import VerifierSettings
from zocrates_verifier.domain import windows

log = structlog.get_logger("zocrates.verifier")

SERVICE = "verifier"


def monotonic_deadline(deadline: datetime | None) -> float | None:
    """A wall-clock deadline as a `time.monotonic()` instant (immune to clock steps later)."""
    if deadline is None:
        return None
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    return time.monotonic() + (deadline - datetime.now(UTC)).total_seconds()


def first_error(outcomes: Sequence[Outcome]) -> ServiceError | None:
    """The reply's error: the first failure, counted ("3 of 10 pairs: ...")."""
    errors = [o for o in outcomes if isinstance(o, VerifierError)]
    if not errors:
        return None
    head = errors[0]
    return ServiceError(
        code=head.code, service=SERVICE, message=f"{len(errors)} of {len(outcomes)} pairs not scored: {head}"
    )


def pair_score(pair: VerificationPair, outcome: Outcome) -> PairScore:
    """A pair's score on the wire: its probability (`None` when it failed) and, when the backend
    said where, the spans of its passage that support the claim and the numbers the claim states
    that the passage does not print (`windows.Support`)."""
    if not isinstance(outcome, float):
        return PairScore(chunk_index=pair.chunk_index, occurrence=pair.occurrence, joint=pair.joint)
    return PairScore(
        chunk_index=pair.chunk_index,
        occurrence=pair.occurrence,
        probability=float(outcome),
        spans=[TextSpan(start=start, end=end) for start, end in windows.spans_of(outcome)],
        joint=pair.joint,
        unprinted_numbers=list(windows.unprinted_of(outcome))[:MAX_UNPRINTED_NUMBERS],
    )


class VerifierService:
    """Owns the backend: resolves the device, loads once, warms up, scores, reports health."""

    def __init__(self, settings: VerifierSettings):
        self.settings = settings
        self.provider = settings.resolved_provider() if settings.enabled else "disabled"
        self.device = "cpu"
        self.backend: Backend | None = None
        self.cpu_fallbacks: dict[str, Any] = {"count": 0, "last_reason": None}
        #: Why the heuristic answers in place of the shipped trained model (None: it does not).
        self.fallback_reason: str | None = None
        self._started = False

    @property
    def model_source(self) -> str:
        """Which kind of model answers: `trained` (the shipped model, the default),
        `heuristic-fallback` (the heuristic, because the shipped model is absent or failed to
        load), `heuristic` (`provider=heuristic`), `checkpoint` (a configured `model_dir`),
        `remote`, or `disabled`."""
        if self.provider == "heuristic":
            return "heuristic-fallback" if self.fallback_reason else "heuristic"
        if self.provider == "local":
            return "trained" if self.settings.uses_shipped_model() else "checkpoint"
        return "remote" if self.provider in ("remote", "openrouter") else self.provider

    async def start(self) -> None:
        """Resolve the device (local models only), load the backend once and warm it up."""
        if self._started or not self.settings.enabled:
            self._started = True
            return
        if self.provider == "local":
            choice = await asyncio.to_thread(resolve_device, self.settings.device)
            self.device = choice.device
            if reason := choice.fallback_reason(self.settings.device):
                self.cpu_fallbacks = {"count": 1, "last_reason": reason}
            log.info("verifier device resolved", device=self.device, rejected=choice.rejected)
        elif self.provider in ("remote", "openrouter"):
            self.device = "remote"
        started = time.perf_counter()
        try:
            backend = await self._started_backend(self.provider, self.device)
        except Exception as exc:
            if not (self.provider == "local" and self.settings.uses_shipped_model()):
                raise  # a configured checkpoint that does not load is the operator's to fix
            self.fallback_reason = (
                f"the trained model is not at {local_torch.SHIPPED_MODEL_DIR}"
                if not local_torch.shipped_model_present()
                else f"the trained model at {local_torch.SHIPPED_MODEL_DIR} failed to load ({type(exc).__name__}: {exc})"
            )
            log.warning("trained verifier model not loaded; the heuristic answers", reason=self.fallback_reason)
            self.provider, self.device = "heuristic", "cpu"
            self.cpu_fallbacks = {"count": 0, "last_reason": None}
            backend = await self._started_backend("heuristic", "cpu")
        if self.provider == "local" and backend.device != self.device:
            self.cpu_fallbacks = {
                "count": 1,
                "last_reason": f"the model could not be placed on {self.device}; it runs on {backend.device}",
            }
            self.device = backend.device
        self.backend = backend
        self._started = True
        log.info(
            "verifier ready",
            provider=backend.provider,
            model=backend.model,
            model_source=self.model_source,
            fallback_reason=self.fallback_reason,
            device=self.device,
            load_ms=round((time.perf_counter() - started) * 1000, 1),
        )

    async def _started_backend(self, provider: str, device: str) -> Backend:
        backend = build_backend(self.settings, provider, device)
        try:
            await backend.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await backend.close()
            raise
        return backend

    @property
    def model(self) -> str:
        return self.backend.model if self.backend else ""

    @property
    def threshold(self) -> float:
        """The setting where there is one; else what the answering model was calibrated for; else
        the default (the heuristic's)."""
        if self.settings.threshold is not None:
            return self.settings.threshold
        calibrated = self.backend.calibrated_threshold() if self.backend else None
        return calibrated if calibrated is not None else SUPPORT_THRESHOLD

    @property
    def threshold_source(self) -> str:
        if self.settings.threshold is not None:
            return "setting"
        return "calibrated" if self.backend and self.backend.calibrated_threshold() is not None else "default"

    async def score(self, pairs: Sequence[Pair], deadline: float | None) -> list[Outcome]:
        """One outcome per pair; raises `Overloaded` to refuse, never for a pair's failure."""
        if self.backend is None:
            why = "verification is disabled" if not self.settings.enabled else "the verifier has not started"
            return [NotAvailable(why)] * len(pairs)
        if deadline is not None and time.monotonic() >= deadline:
            # Past its deadline: answered without touching the model.
            return [DeadlineExceeded("the request's deadline had passed on arrival")] * len(pairs)
        try:
            return await self.backend.score(pairs, deadline)
        except Overloaded:
            raise
        except VerifierError as exc:
            return [exc] * len(pairs)
        except Exception as exc:  # noqa: BLE001 -- fail open, never lose the reply
            log.exception("verifier backend failed", provider=self.provider)
            return [PredictFailed(f"backend failed: {type(exc).__name__}")] * len(pairs)

    async def verify(self, request: VerificationRequested) -> VerificationCompleted:
        """Scores for every pair of `request`, in its order; failures are `None` plus `error`."""
        started = time.perf_counter()
        pairs = [Pair(p.claim, p.source_text, p.compound, p.quoted, tuple(p.passage_starts)) for p in request.pairs]
        try:
            outcomes = await self.score(pairs, monotonic_deadline(request.deadline))
        except Overloaded as exc:
            outcomes = [exc] * len(pairs)
        scores = [pair_score(p, o) for p, o in zip(request.pairs, outcomes)]
        latency_ms = (time.perf_counter() - started) * 1000.0
        error = first_error(outcomes)
        log.info(
            "verification scored",
            turn_id=request.turn_id,
            pairs=len(pairs),
            failed=sum(s.probability is None for s in scores),
            provider=self.provider,
            model=self.model,
            device=self.device,
            latency_ms=round(latency_ms, 1),
            error=error.code if error else None,
        )
        return VerificationCompleted(
            **request.reply_fields(),
            scores=scores,
            provider=self.provider,
            model=self.model,
            device=self.device,
            latency_ms=latency_ms,
            threshold=self.threshold,
            error=error,
        )

    def health(self) -> dict[str, Any]:
        """Readiness in Laya's /health shape, plus provider and model."""
        backend = self.backend.health() if self.backend else {"loaded": False}
        loaded = bool(backend.pop("loaded", False))
        payload: dict[str, Any] = {
            "status": "ok",
            "device": self.device,
            "loaded": [self.model] if loaded else [],
            "checkpoint_devices": {self.model: self.device} if loaded else {},
            "cpu_fallbacks": {self.model: self.cpu_fallbacks} if self.model else {},
            "provider": self.provider,
            "model": self.model,
            "model_source": self.model_source,
            "fallback_reason": self.fallback_reason,
            "threshold": self.threshold,
            "threshold_source": self.threshold_source,
            **backend,
        }
        if self.device.startswith("cuda"):
            payload["memory"] = _cuda_memory(self.device)
        payload["rss_bytes"] = _rss()
        return payload

    async def close(self) -> None:
        if self.backend is not None:
            await self.backend.close()
            self.backend = None


def _cuda_memory(device: str) -> dict[str, int]:
    try:
        import torch

        free, total = torch.cuda.mem_get_info(torch.device(device))
        return {"free_bytes": free, "total_bytes": total}
    except Exception:  # noqa: BLE001 -- health must answer even with a sick driver
        return {}


def _rss() -> int | None:
    try:
        import psutil

        return psutil.Process().memory_info().rss
    except Exception:  # noqa: BLE001
        return None
