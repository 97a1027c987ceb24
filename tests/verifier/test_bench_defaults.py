"""The GPU bench runs without pydantic, so it carries the batcher's defaults: keep them equal."""

from bench.bench_verifier import BATCHER_DEFAULTS
from zocrates_verifier.config import VerifierSettings


def test_bench_defaults_match_the_settings():
    settings = VerifierSettings()
    assert BATCHER_DEFAULTS == {"max_batch_tokens": settings.max_batch_tokens,
                                "max_batch_pairs": settings.max_batch_pairs,
                                "max_wait_ms": settings.max_wait_ms}
