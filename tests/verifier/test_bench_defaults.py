"""The GPU bench runs without pydantic, so it carries the batcher's defaults: keep them equal."""

import re

from bench.bench_verifier import BATCHER_DEFAULTS
from zocrates_verifier.config import VerifierSettings


def test_bench_defaults_match_the_settings():
    settings = VerifierSettings()
    assert BATCHER_DEFAULTS == {
        "max_batch_tokens": settings.max_batch_tokens,
        "max_batch_pairs": settings.max_batch_pairs,
        "max_wait_ms": settings.max_wait_ms,
    }


def test_flops_per_pair_is_the_arithmetic_predict_runs(tiny_checkpoint):
    """The bound's numerator: torch's FlopCounterMode on the real `predict` path agrees, once
    the attention it does not count on CPU (sdpa) is added back; a compound pair costs its
    rows (the claim and each clause)."""
    from torch.utils.flop_counter import FlopCounterMode

    from bench.bench_verifier import _flops_per_pair
    from zocrates_verifier.adapters.backends.base import Pair
    from zocrates_verifier.adapters.backends.local_torch import load_model

    model = load_model(tiny_checkpoint, dtype="float32", runtime="torch")  # what FlopCounterMode counts
    model.setup("cpu")
    passage = "In a trial of 400 adults aspirin lowered the risk of stroke by a third."
    pairs = [
        Pair("Aspirin lowers the risk of stroke.", passage),
        Pair("Bleeding was more common with aspirin in older adults.", passage),
    ]
    computed = _flops_per_pair(model, [pairs]) * len(pairs)
    with FlopCounterMode(display=False) as counter:
        for pair in pairs:
            model.predict([pair])
    c = model._net.config
    lengths = [len(model._tokenizer(p.source_text, p.claim)["input_ids"]) for p in pairs]
    attention = sum(4 * c.num_hidden_layers * n * n * c.hidden_size for n in lengths)
    assert computed - counter.get_total_flops() == attention

    clauses = [
        "Aspirin lowers the stroke risk, and it raises the bleeding risk.",
        "Aspirin lowers the stroke risk",
        "it raises the bleeding risk",
    ]
    compound = Pair(clauses[0], passage, compound=True)
    rows = [[Pair(claim, passage)] for claim in clauses]
    assert _flops_per_pair(model, [[compound]]) == sum(_flops_per_pair(model, [r]) for r in rows)


def test_throughput_section_reports_the_arithmetic_bound(tiny_checkpoint):
    from bench.bench_verifier import _workload, throughput_section

    lines = throughput_section(_workload()[:2], dtypes=["float32"], source=tiny_checkpoint, rounds=1)
    text = "\n".join(lines)
    assert re.search(r"\| float32(?: \(openvino\))? \| \d+ \| one pair per pass \| [\d.]+ \|", text)
    bound = next(line for line in lines if line.startswith("Arithmetic bound"))
    assert "GFLOP/s, at most" in bound and "x." in bound
