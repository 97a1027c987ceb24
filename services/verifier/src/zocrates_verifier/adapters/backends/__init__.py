"""Backends: where a support probability comes from (see `base` for the interfaces)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zocrates_verifier.adapters.backends.base import Backend

if TYPE_CHECKING:  # the models import without pydantic (the GPU bench runs on a bare image)
    from zocrates_verifier.config import VerifierSettings


def build_backend(settings: VerifierSettings, provider: str, device: str) -> Backend:
    """The configured backend for `provider` (already resolved from `auto`), not started."""
    if provider == "remote":
        from zocrates_verifier.adapters.backends.remote import RemoteBackend

        key = settings.remote_api_key.get_secret_value() if settings.remote_api_key else None
        return RemoteBackend(
            settings.remote_url,
            api_key=key,
            model=settings.model,
            timeout_s=settings.request_timeout_s,
            max_states=settings.remote_max_states,
        )
    if provider == "openrouter":
        from zocrates_verifier.adapters.backends.openrouter import OpenRouterBackend

        key = settings.openrouter_api_key.get_secret_value() if settings.openrouter_api_key else None
        return OpenRouterBackend(
            key,
            model=settings.model,
            url=settings.openrouter_url,
            chat_url=settings.openrouter_chat_url,
            fallback_model=settings.openrouter_fallback_model,
            timeout_s=settings.request_timeout_s,
            concurrency=settings.openrouter_concurrency,
        )
    from zocrates_verifier.adapters.backends.batched import BatchedBackend

    if provider == "local":
        from zocrates_verifier.adapters.backends.local_torch import load_model

        model = load_model(
            settings.checkpoint_dir(),
            dtype=settings.dtype,
            max_seq_len=settings.max_seq_len,
            name=settings.model,
            max_windows=settings.max_windows,
            verbatim_rule=settings.verbatim_rule,
            number_rule=settings.number_rule,
            runtime=settings.runtime,
        )
    elif provider == "heuristic":
        from zocrates_verifier.adapters.backends.heuristic import HeuristicModel

        model = HeuristicModel(verbatim_rule=settings.verbatim_rule, number_rule=settings.number_rule)
    else:
        raise ValueError(f"unknown verifier provider {provider!r}")
    return BatchedBackend(
        model,
        device,
        warmup=settings.warmup,
        cpu_threads=settings.cpu_threads if provider == "local" else 0,  # the heuristic needs no torch
        max_batch_tokens=settings.max_batch_tokens,
        max_batch_items=settings.max_batch_pairs,
        max_wait_s=settings.max_wait_ms / 1000.0,
        max_queue_items=settings.max_queue_pairs,
    )
