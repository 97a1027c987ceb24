"""Calibrate, ship and evaluate the verifier model that `tools.train_verifier` trained.

- Calibration (calibration split only): one temperature T for the three logits, by log-loss;
  support probability = softmax(logits / T)[support]. The threshold is the one in
  [0.50, 0.95] with the best F0.5 for support vs the rest on the calibration split (a kept
  citation that does not support its claim costs a researcher more than a demoted one that
  does).
- Shipping: T is folded into the classifier (weights and bias divided by T), so the checkpoint's
  own softmax is calibrated and the verifier's local-torch backend needs nothing extra; float16
  safetensors; the tokenizer's window is 256 tokens.
- Evaluation (every eval split; none is trained or calibrated on), of the shipped checkpoint
  through the verifier's own backend class: AUROC support vs rest and support vs contradict,
  ECE (10 equal-width bins) and accuracy, precision and recall at the shipped threshold, beside
  the heuristic backend and plain lexical overlap (the share of the claim's content stems found
  in the passage, the heuristic's `coverage` feature) on the same pairs; the number probe; CPU
  throughput at 256 tokens in float32, bfloat16 and int8; a reliability diagram.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tools.train_verifier import EVAL_SPLITS, LABELS, SERVED_MAX_LENGTH
from zocrates_contracts import SUPPORT_THRESHOLD

SUPPORT = LABELS.index("support")
#: What the shipped checkpoint calls itself (the verifier reports it as the model's name).
MODEL_NAME = "zocrates-verifier-minilm-v2"
#: The threshold the gateway applies unless the verifier is configured with another
#: (ZOCRATES_VERIFIER_THRESHOLD): figures are reported at it too, beside the calibrated one.
GATEWAY_THRESHOLD = SUPPORT_THRESHOLD
DIAGRAM = Path(__file__).resolve().parent.parent / "docs" / "verifier-reliability.png"


# --- calibration ---------------------------------------------------------------------------


def _log_softmax(rows, temperature: float):
    import numpy as np

    z = np.asarray(rows, dtype=float) / temperature
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def fit_temperature(rows: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """The T > 0 minimising the log-loss of softmax(logits / T) (golden-section search on log T,
    which the log-loss is unimodal in)."""
    import numpy as np

    idx = np.asarray(labels)

    def nll(log_t: float) -> float:
        return float(-_log_softmax(rows, math.exp(log_t))[np.arange(len(idx)), idx].mean())

    lo, hi = math.log(0.05), math.log(20.0)
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if nll(a) < nll(b):
            hi = b
        else:
            lo = a
    return round(math.exp((lo + hi) / 2), 4)


def support_probabilities(rows: Sequence[Sequence[float]], temperature: float) -> list[float]:
    import numpy as np

    return [float(p) for p in np.exp(_log_softmax(rows, temperature))[:, SUPPORT]]


def f_beta(scores: Sequence[float], positive: Sequence[bool], threshold: float, beta: float = 0.5) -> float:
    tp = sum(s >= threshold and y for s, y in zip(scores, positive))
    fp = sum(s >= threshold and not y for s, y in zip(scores, positive))
    fn = sum(s < threshold and y for s, y in zip(scores, positive))
    denominator = (1 + beta**2) * tp + beta**2 * fn + fp
    return (1 + beta**2) * tp / denominator if denominator else 0.0


def pick_threshold(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """The threshold in [0.50, 0.95] (the settings' range), by 0.01, with the best F0.5."""
    candidates = [round(0.50 + 0.01 * i, 2) for i in range(46)]
    return max(candidates, key=lambda t: (f_beta(scores, positive, t), -t))


# --- shipping ------------------------------------------------------------------------------


def ship(trained: Path, target: Path, report: dict) -> None:
    """The trained checkpoint, temperature folded in, as float16 safetensors in `target`."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    calibration = report["calibration"]
    model = AutoModelForSequenceClassification.from_pretrained(trained)
    with torch.no_grad():
        model.classifier.weight /= calibration["temperature"]
        model.classifier.bias /= calibration["temperature"]
    model.config.zocrates_verifier = {
        "name": report.get("name", MODEL_NAME),
        "labels": list(LABELS),
        "temperature_folded_in": calibration["temperature"],
        "threshold": calibration["threshold"],
        "max_length": SERVED_MAX_LENGTH,
        "trained_pairs": report["training"].get("stopped_early_after_pairs", report["training"]["pairs"]),
        "recipe": report["training"].get("command", ""),
        "second_stage": (
            {
                "pairs": report["domain"]["pairs"],
                "epochs": report["domain"]["epochs"],
                "recipe": report["domain"].get("command", ""),
            }
            if "domain" in report
            else None
        ),
        "data": "bench/data/verifier/MANIFEST.md",
        "docs": "docs/verifier-model.md",
    }
    target.mkdir(parents=True, exist_ok=True)
    model.half().save_pretrained(target, safe_serialization=True)
    tokenizer = AutoTokenizer.from_pretrained(trained)
    tokenizer.model_max_length = SERVED_MAX_LENGTH
    tokenizer.save_pretrained(target)


# --- scoring -------------------------------------------------------------------------------


def served_model(
    checkpoint: Path,
    dtype: str = "float32",
    *,
    max_windows: int = 1,
    verbatim_rule: bool = False,
    number_rule: bool = False,
    runtime: str = "torch",
):
    """The checkpoint through the verifier's own backend class, on the CPU: by default the
    whole passage as one row and neither the verbatim rule nor the number rule (how the model
    itself reads a pair), run by torch (what every recorded figure was measured with; the
    verifier serves float32 and bfloat16 through OpenVINO, within 0.02 of it)."""
    from zocrates_verifier.adapters.backends.local_torch import load_model

    model = load_model(
        checkpoint,
        dtype=dtype,
        max_seq_len=SERVED_MAX_LENGTH,
        max_windows=max_windows,
        verbatim_rule=verbatim_rule,
        number_rule=number_rule,
        runtime=runtime,
    )
    model.setup("cpu")
    return model


def served_scores(model, rows: Sequence[dict], batch: int = 32) -> list[float]:
    from zocrates_verifier.adapters.backends.base import Pair

    pairs = [Pair(r["claim"], r["passage"]) for r in rows]
    out: list[float] = []
    for i in range(0, len(pairs), batch):
        out += model.predict(pairs[i : i + batch])
    return out


def heuristic_scores(rows: Sequence[dict]) -> list[float]:
    from zocrates_verifier.adapters.backends.base import Pair
    from zocrates_verifier.adapters.backends.heuristic import score_pair

    return [score_pair(Pair(r["claim"], r["passage"])) for r in rows]


def overlap_scores(rows: Sequence[dict]) -> list[float]:
    """Plain lexical overlap: the share of the claim's content stems found in the passage."""
    from zocrates_verifier.adapters.backends.heuristic import features

    return [features(r["claim"], r["passage"])[0] for r in rows]


# --- metrics -------------------------------------------------------------------------------


def _rounded(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 3)


def split_metrics(scores: Sequence[float], labels: Sequence[str], threshold: float | None) -> dict:
    """AUROC support vs rest and vs contradict; with a threshold (a probability), ECE and
    accuracy, precision and recall of support at it."""
    from zocrates_verifier.domain.calibration import auroc, expected_calibration_error

    positive = [label == "support" for label in labels]
    pairs = [(s, y == "support") for s, y in zip(scores, labels) if y in ("support", "contradict")]
    found = {
        "auroc_support_vs_rest": _rounded(auroc(scores, [int(p) for p in positive])),
        "auroc_support_vs_contradict": _rounded(auroc([s for s, _ in pairs], [int(y) for _, y in pairs])),
    }
    if threshold is not None:
        kept = [s >= threshold for s in scores]
        tp = sum(k and y for k, y in zip(kept, positive))
        found |= {
            "ece": _rounded(expected_calibration_error(scores, [int(p) for p in positive])),
            "accuracy": _rounded(sum(k == y for k, y in zip(kept, positive)) / len(kept)),
            "precision": _rounded(tp / sum(kept)) if sum(kept) else None,
            "recall": _rounded(tp / sum(positive)) if sum(positive) else None,
            "mean_probability": _rounded(sum(scores) / len(scores)),
            "support_rate": _rounded(sum(positive) / len(positive)),
        }
    return found


def number_probe_rows(rows: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(quoted, swapped): a sentence stating a number quoted from each distinct passage of the
    split, and the same sentence with the number changed; then each supported claim whose
    number the passage states, with that number changed (`zocrates_verifier.domain.calibration`'s
    recipes)."""
    from zocrates_verifier.domain.calibration import LabeledPair, number_probe, number_swaps

    labeled = [LabeledPair(i, r["claim"], r["passage"], int(r["label"] == "support")) for i, r in enumerate(rows)]
    probe = number_probe(labeled)
    quoted = [{"claim": p.claim, "passage": p.passage, "label": "support"} for p in probe if p.label]
    swapped = [{"claim": p.claim, "passage": p.passage, "label": "contradict"} for p in probe if not p.label]
    swapped += [
        {"claim": p.claim, "passage": p.passage, "label": "contradict"}
        for p in number_swaps([p for p in labeled if p.label], seed=31)
    ]
    return quoted, swapped


def probe_metrics(
    score: Callable[[list[dict]], list[float]], rows: Sequence[dict], threshold: float, also: float | None = None
) -> dict:
    """Shares of the number probe's swapped claims below `threshold` and of its quoted
    sentences at or above it (and the same at the threshold `also`)."""
    quoted, swapped = number_probe_rows(rows)
    q, s = score(quoted), score(swapped)
    found = {"swapped": len(s), "quoted": len(q)}
    for t, suffix in ((threshold, ""), (also, f"_at_{also:.2f}" if also is not None else "")):
        if t is not None:
            found[f"swapped_below_threshold{suffix}"] = _rounded(sum(x < t for x in s) / len(s)) if s else None
            found[f"quoted_at_or_above_threshold{suffix}"] = _rounded(sum(x >= t for x in q) / len(q)) if q else None
    return found


def contrast_metrics(
    score: Callable[[list[dict]], list[float]], rows: Sequence[dict], threshold: float, also: float | None = None
) -> dict:
    """Shares of the split's supported pairs turned into contradictions (a claim reversed or
    negated, a one-sentence passage negated: `tools.verifier_contrast`) below `threshold`, and of
    the supported pairs they were made from at or above it (and the same at the threshold `also`);
    and, whatever the threshold, the share of turned pairs scored below the pair they came from."""
    from tools.verifier_contrast import contrast_probe_rows

    originals, turned = contrast_probe_rows(rows)
    o, t = score(originals), score(turned)
    below = sum(score < o[row["original"]] for score, row in zip(t, turned))
    found = {"turned": len(t), "originals": len(o), "turned_below_original": _rounded(below / len(t)) if t else None}
    for bar, suffix in ((threshold, ""), (also, f"_at_{also:.2f}" if also is not None else "")):
        if bar is not None:
            found[f"turned_below_threshold{suffix}"] = _rounded(sum(x < bar for x in t) / len(t)) if t else None
            found[f"originals_at_or_above_threshold{suffix}"] = (
                _rounded(sum(x >= bar for x in o) / len(o)) if o else None
            )
    return found


# --- throughput ----------------------------------------------------------------------------


def throughput(
    checkpoint: Path,
    rows: Sequence[dict],
    *,
    dtypes=("float32", "bfloat16", "int8", "openvino-float32", "openvino-bfloat16", "onnxruntime-int8"),
    threads=(1, 2),
    pairs: int = 128,
    batch: int = 32,
    repeats: int = 3,
) -> list[dict]:
    """Pairs/s of the served model on pairs of at least 256 tokens (cut to 256), `batch` per
    forward pass, per dtype and torch thread count: one warm-up pass, then the median of
    `repeats` timed runs over all the pairs, with the CPU that ran them. `int8` is torch's
    dynamic quantisation of the Linear layers (what the verifier's `dtype=int8` runs);
    `openvino-float32` and `openvino-bfloat16` are the checkpoint converted to OpenVINO, compiled
    for each thread count (what the verifier's `runtime=auto` serves on the CPU); `onnxruntime-int8` is the same checkpoint exported to ONNX and dynamically quantised by
    ONNX Runtime (measured only: the verifier does not serve it), skipped without `onnx`."""
    import torch
    from transformers import AutoTokenizer

    from zocrates_runtime.device import cpu_description

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    long_rows = [r for r in rows if len(tokenizer(r["passage"], r["claim"])["input_ids"]) >= SERVED_MAX_LENGTH]
    long_rows = long_rows[:pairs]
    before = torch.get_num_threads()
    found = []
    try:
        for dtype in dtypes:
            if dtype == "onnxruntime-int8":
                scorers = _onnxruntime_int8(checkpoint, tokenizer, threads)
                if scorers is None:
                    continue
            elif dtype.startswith("openvino-"):
                scorers = {n: _openvino_scorer(checkpoint, dtype.removeprefix("openvino-"), n, batch) for n in threads}
            else:
                model = served_model(checkpoint, dtype)
                scorers = {
                    n: (lambda rs, n=n: (torch.set_num_threads(n), served_scores(model, rs, batch))) for n in threads
                }
            for n, score in scorers.items():
                score(long_rows[:batch])
                timings = []
                for _ in range(repeats):
                    started = time.perf_counter()
                    score(long_rows)
                    timings.append(time.perf_counter() - started)
                seconds = statistics.median(timings)
                found.append(
                    {
                        "dtype": dtype,
                        "threads": n,
                        "pairs": len(long_rows),
                        "batch": batch,
                        "tokens_per_pair": SERVED_MAX_LENGTH,
                        "pairs_per_s": round(len(long_rows) / seconds, 1),
                        "cpu": cpu_description(),
                    }
                )
    finally:
        torch.set_num_threads(before)
    return found


def _openvino_scorer(checkpoint: Path, dtype: str, threads: int, batch: int):
    """score(rows) through the checkpoint in OpenVINO, compiled for `threads` threads (OpenVINO
    fixes its thread count when it compiles, from torch's at that moment)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = served_model(checkpoint, dtype, runtime="openvino")
    finally:
        torch.set_num_threads(before)
    return lambda rows: served_scores(model, rows, batch)


def _onnxruntime_int8(checkpoint: Path, tokenizer, threads, batch: int = 32):
    """{threads: score(rows)} over an ONNX Runtime session of the int8-quantised export, or None
    when the `onnx` package (needed to export and quantise) is not installed."""
    try:
        import onnx  # noqa: F401
    except ImportError:
        return None
    import tempfile

    import numpy as np
    import onnxruntime
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModelForSequenceClassification

    folder = Path(tempfile.mkdtemp(prefix="verifier-onnx-"))
    net = AutoModelForSequenceClassification.from_pretrained(checkpoint, dtype=torch.float32).eval()
    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = tokenizer(["a passage"] * 2, ["a claim"] * 2, return_tensors="pt")
    torch.onnx.export(
        net,
        tuple(example[k] for k in names),
        folder / "model.onnx",
        input_names=names,
        output_names=["logits"],
        dynamic_axes={k: {0: "batch", 1: "tokens"} for k in names} | {"logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(folder / "model.onnx", folder / "model.int8.onnx", weight_type=QuantType.QInt8)

    def scorer(n: int):
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = n, 1
        session = onnxruntime.InferenceSession(
            str(folder / "model.int8.onnx"), options, providers=["CPUExecutionProvider"]
        )

        def score(rows):
            for i in range(0, len(rows), batch):
                part = rows[i : i + batch]
                encoded = tokenizer(
                    [r["passage"] for r in part],
                    [r["claim"] for r in part],
                    truncation="longest_first",
                    max_length=SERVED_MAX_LENGTH,
                    padding=True,
                    return_tensors="np",
                )
                session.run(None, {k: encoded[k].astype(np.int64) for k in names})

        return score

    return {n: scorer(n) for n in threads}


# --- the reliability diagram ---------------------------------------------------------------


def reliability_diagram(
    curves: dict[str, dict[str, tuple[list[float], list[str]]]], threshold: float, out: Path = DIAGRAM
) -> Path:
    """One panel per split: observed support rate per 10 probability bins, for each scorer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from zocrates_verifier.domain.calibration import expected_calibration_error

    fig, axes = plt.subplots(1, len(curves), figsize=(4 * len(curves), 4.2), sharey=True)
    for ax, (split, scorers) in zip(axes, curves.items()):
        ax.plot([0, 1], [0, 1], color="#999", lw=1, ls="--")
        ax.axvline(threshold, color="#c33", lw=0.8, ls=":")
        for (name, (scores, labels)), style in zip(scorers.items(), ("o-", "s--")):
            xs, ys = [], []
            for b in range(10):
                members = [
                    (s, y == "support")
                    for s, y in zip(scores, labels)
                    if b / 10 <= s < (b + 1) / 10 or (b == 9 and s == 1.0)
                ]
                if len(members) >= 5:
                    xs.append(sum(s for s, _ in members) / len(members))
                    ys.append(sum(y for _, y in members) / len(members))
            ece = expected_calibration_error(scores, [int(y == "support") for y in labels])
            ax.plot(xs, ys, style, ms=4, label=f"{name} (ECE {ece:.3f})")
        ax.set_title(f"{split} ({len(next(iter(scorers.values()))[0])} pairs)", fontsize=9)
        ax.set_xlabel("predicted P(support)")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7, loc="upper left")
    axes[0].set_ylabel("observed share that supports")
    fig.suptitle(
        f"Verifier reliability (bins of 0.1 with at least 5 pairs; dotted: threshold {threshold:.2f})", fontsize=10
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return out


# --- the whole evaluation ------------------------------------------------------------------


def _sample(rows: list[dict], limit: int, seed: int) -> list[dict]:
    import random

    if not limit or len(rows) <= limit:
        return rows
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    return rows[:limit]


def calibrate_and_evaluate(
    trained: Path,
    splits: dict[str, list[dict]],
    *,
    rows_per_split: int,
    device: str,
    seed: int,
    log,
    ship_to: Path | None = None,
    diagram: Path | None = DIAGRAM,
    measure_throughput: bool = True,
) -> dict:
    """Fit T and the threshold on the calibration split, ship (to `ship_to`, else
    `trained/calibrated`), fit the sentence windows' temperature and threshold on the same
    split (`calibrate_windows`), and evaluate the shipped checkpoint, read whole, on every split
    (`windows_main` evaluates it through windows)."""
    from tools.cross_encoder import logits

    calibration_rows = _sample(splits["calibration"], rows_per_split, seed)
    started = time.monotonic()
    raw = logits(trained, [(r["passage"], r["claim"]) for r in calibration_rows], SERVED_MAX_LENGTH, device)
    temperature = fit_temperature(raw, [LABELS.index(r["label"]) for r in calibration_rows])
    calibrated = support_probabilities(raw, temperature)
    threshold = pick_threshold(calibrated, [r["label"] == "support" for r in calibration_rows])
    log(f"calibration: T = {temperature}, threshold {threshold} ({time.monotonic() - started:.0f} s)")
    report = {
        "calibration": {
            "pairs": len(calibration_rows),
            "temperature": temperature,
            "threshold": threshold,
            "uncalibrated": split_metrics(
                support_probabilities(raw, 1.0), [r["label"] for r in calibration_rows], threshold
            ),
        }
    }
    target = ship_to or trained / "calibrated"
    ship(trained, target, {**json.loads((trained / "training_report.json").read_text()), **report})
    log(f"calibrated float16 checkpoint written to {target}")
    from zocrates_verifier.domain.windows import MAX_WINDOWS

    windows = calibrate_windows(target, calibration_rows, dtype="float32", max_windows=MAX_WINDOWS)
    write_window_calibration(target, windows, MAX_WINDOWS)
    report["windows"] = {"max_windows": MAX_WINDOWS, "calibration": windows | {"dtype": "float32"}}
    log(f"window calibration: {json.dumps(windows)} (evaluate with python -m tools.verifier_eval --skip-calibration)")

    model = served_model(target)
    evaluation, curves = {}, {}
    for name in ("calibration",) + EVAL_SPLITS:
        rows = _sample(splits[name], rows_per_split, seed)
        labels = [r["label"] for r in rows]
        started = time.monotonic()
        trained_scores = served_scores(model, rows)
        seconds = time.monotonic() - started
        heuristic = heuristic_scores(rows)
        evaluation[name] = {
            "pairs": len(rows),
            "labels": {label: labels.count(label) for label in LABELS},
            "trained": split_metrics(trained_scores, labels, threshold),
            f"trained_at_{GATEWAY_THRESHOLD:.2f}": split_metrics(trained_scores, labels, GATEWAY_THRESHOLD),
            "heuristic": split_metrics(heuristic, labels, threshold),
            f"heuristic_at_{GATEWAY_THRESHOLD:.2f}": split_metrics(heuristic, labels, GATEWAY_THRESHOLD),
            "lexical_overlap": split_metrics(overlap_scores(rows), labels, None),
            "number_probe": {
                "trained": probe_metrics(lambda rs: served_scores(model, rs), rows, threshold, also=GATEWAY_THRESHOLD),
                "heuristic": probe_metrics(heuristic_scores, rows, threshold, also=GATEWAY_THRESHOLD),
            },
            "contrast_probe": {
                "trained": contrast_metrics(
                    lambda rs: served_scores(model, rs), rows, threshold, also=GATEWAY_THRESHOLD
                ),
                "heuristic": contrast_metrics(heuristic_scores, rows, threshold, also=GATEWAY_THRESHOLD),
            },
            "scoring_pairs_per_s": round(len(rows) / max(seconds, 1e-9), 1),
        }
        curves[name] = {"trained": (trained_scores, labels), "heuristic": (heuristic, labels)}
        log(f"{name}: {json.dumps(evaluation[name])}")
    report["evaluation"] = evaluation
    if diagram is not None:
        report["reliability_diagram"] = str(reliability_diagram(curves, threshold, diagram))
    if measure_throughput:
        report["throughput"] = throughput(target, splits["eval_wice"])
        log(f"throughput: {json.dumps(report['throughput'])}")
    return report


# --- sentence windows ----------------------------------------------------------------------


def calibrate_windows(checkpoint: Path, calibration: Sequence[dict], *, dtype: str, max_windows: int) -> dict:
    """The window temperature and threshold of `checkpoint` read through sentence windows,
    fitted on the calibration split only by the same procedure as the model's own temperature
    (log-loss over the three labels, on the log of the best window's distribution) and threshold
    (best F0.5 in [0.50, 0.95])."""
    import numpy as np

    from zocrates_verifier.adapters.backends.base import Pair

    model = served_model(checkpoint, dtype, max_windows=max_windows)
    pairs = [Pair(r["claim"], r["passage"]) for r in calibration]
    distributions = []
    for i in range(0, len(pairs), 32):
        distributions += [distribution for distribution, _ in model.window_distributions(pairs[i : i + 32])]
    logs = np.log(np.clip(np.asarray(distributions, dtype=float), 1e-12, 1.0))
    temperature = fit_temperature(logs, [LABELS.index(r["label"]) for r in calibration])
    support = support_probabilities(logs, temperature)
    threshold = pick_threshold(support, [r["label"] == "support" for r in calibration])
    return {"pairs": len(calibration), "temperature": temperature, "threshold": threshold}


def write_window_calibration(checkpoint: Path, calibration: dict, max_windows: int) -> None:
    """Record the window calibration in the checkpoint's config.json (`zocrates_verifier`),
    where the verifier reads it; the whole-passage threshold is kept beside it."""
    path = checkpoint / "config.json"
    config = json.loads(path.read_text())
    own = config.setdefault("zocrates_verifier", {})
    own.setdefault("whole_passage_threshold", own.get("threshold"))
    own |= {
        "window_temperature": calibration["temperature"],
        "threshold": calibration["threshold"],
        "max_windows": max_windows,
    }
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def evaluate_windows(
    checkpoint: Path, splits: dict[str, list[dict]], *, dtype: str, max_windows: int, threshold: float, log
) -> dict:
    """Every split through the served model as the verifier runs it (sentence windows, the
    number rule and the verbatim rule), the number probe, and how many pairs each rule changed."""
    model = served_model(checkpoint, dtype, max_windows=max_windows, verbatim_rule=True, number_rule=True)
    found = {}
    for name in ("calibration",) + EVAL_SPLITS:
        rows = splits[name]
        labels = [r["label"] for r in rows]
        model.rules.verbatim_raised = model.rules.number_capped = 0
        started = time.monotonic()
        scores = served_scores(model, rows)
        seconds = time.monotonic() - started
        raised, capped = model.rules.verbatim_raised, model.rules.number_capped
        model.rules.verbatim_raised = model.rules.number_capped = 0
        probe = probe_metrics(lambda rs: served_scores(model, rs), rows, threshold, also=GATEWAY_THRESHOLD)
        found[name] = {
            "pairs": len(rows),
            "labels": {label: labels.count(label) for label in LABELS},
            "windowed": split_metrics(scores, labels, threshold),
            f"windowed_at_{GATEWAY_THRESHOLD:.2f}": split_metrics(scores, labels, GATEWAY_THRESHOLD),
            "verbatim_rule_raised": raised,
            "number_rule_capped": capped,
            "number_probe": probe
            | {"verbatim_rule_raised": model.rules.verbatim_raised, "number_rule_capped": model.rules.number_capped},
            "contrast_probe": contrast_metrics(
                lambda rs: served_scores(model, rs), rows, threshold, also=GATEWAY_THRESHOLD
            ),
            "scoring_pairs_per_s": round(len(rows) / max(seconds, 1e-9), 1),
        }
        log(f"{name}: {json.dumps(found[name])}")
    return found


def window_cost(checkpoint: Path, splits: dict[str, list[dict]], *, dtype: str, max_windows: int, pairs: int = 64):
    """Rows and milliseconds per citation, one pair per call, on the held-out SciFact and WiCE
    pairs: the whole passage as one row beside sentence windows."""
    from zocrates_verifier.adapters.backends.base import Pair

    found = {}
    for name in ("eval_scifact_heldout", "eval_wice"):
        sample = [Pair(r["claim"], r["passage"]) for r in splits[name][:pairs]]
        for windows in (1, max_windows):
            model = served_model(checkpoint, dtype, max_windows=windows)
            model.predict(sample[:2])
            rows = sum(len(model._windows(p.claim, p.source_text)) for p in sample)
            started = time.perf_counter()
            for pair in sample:
                model.predict([pair])
            found[f"{name}_windows_{windows}"] = {
                "rows_per_citation": round(rows / len(sample), 2),
                "ms_per_citation": round((time.perf_counter() - started) * 1000 / len(sample), 1),
            }
    return found


def record_throughput(section: dict, rates: list[dict], command: str) -> None:
    """`rates` as the latest throughput, and kept by CPU beside those of other CPUs (bfloat16's
    rate differs two to three times between CPUs with and without native bfloat16)."""
    measured = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section["throughput"] = rates
    section["throughput_measured"] = measured
    if rates:
        section.setdefault("throughput_by_cpu", {})[rates[0]["cpu"]] = {
            "measured": measured,
            "command": command,
            "rates": rates,
        }


def windows_main(argv: list[str] | None = None) -> None:
    """Recalibrate the shipped checkpoint for sentence windows and re-evaluate it (its
    training_report.json gains a `windows` section; the model's weights are untouched)."""
    import argparse

    import torch

    from tools.train_verifier import load_splits
    from zocrates_verifier.adapters.backends.local_torch import SHIPPED_MODEL_DIR

    parser = argparse.ArgumentParser(description=windows_main.__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=SHIPPED_MODEL_DIR)
    parser.add_argument("--dtype", default="float32", help="the dtype scored with (calibration and evaluation)")
    parser.add_argument("--max-windows", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-calibration", action="store_true", help="evaluate with the recorded calibration")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument(
        "--throughput-only", action="store_true", help="measure and record only the throughput, on this CPU"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    def log(line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)

    splits = load_splits()
    report_path = args.checkpoint / "training_report.json"
    report = json.loads(report_path.read_text())
    section = report.setdefault("windows", {})
    command = " ".join(["python -m tools.verifier_eval"] + (argv if argv is not None else sys.argv[1:]))
    if args.throughput_only:
        record_throughput(section, throughput(args.checkpoint, splits["eval_wice"], threads=(1, 2)), command)
        log(f"throughput: {json.dumps(section['throughput'])}")
        report_path.write_text(json.dumps(report, indent=1) + "\n")
        return
    section["max_windows"] = args.max_windows
    if not args.skip_calibration:
        started = time.monotonic()
        calibration = calibrate_windows(
            args.checkpoint, splits["calibration"], dtype=args.dtype, max_windows=args.max_windows
        )
        log(f"window calibration ({time.monotonic() - started:.0f} s): {json.dumps(calibration)}")
        write_window_calibration(args.checkpoint, calibration, args.max_windows)
        section["calibration"] = calibration | {"dtype": args.dtype}
    threshold = section["calibration"]["threshold"]
    section[f"evaluation_{args.dtype}"] = evaluate_windows(
        args.checkpoint, splits, dtype=args.dtype, max_windows=args.max_windows, threshold=threshold, log=log
    )
    section[f"cost_{args.dtype}"] = window_cost(args.checkpoint, splits, dtype=args.dtype, max_windows=args.max_windows)
    log(f"cost: {json.dumps(section[f'cost_{args.dtype}'])}")
    if not args.no_throughput:
        record_throughput(section, throughput(args.checkpoint, splits["eval_wice"], threads=(1, 2)), command)
        log(f"throughput: {json.dumps(section['throughput'])}")
    section["measured"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    section["command"] = command
    report_path.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    windows_main()
