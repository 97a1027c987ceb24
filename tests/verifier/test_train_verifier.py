"""The verifier model's recipe runs end to end on a few pairs (train, calibrate, ship, evaluate),
and its calibration pieces do what they say."""

from __future__ import annotations

import json
import math
import random

from tools import train_verifier, verifier_eval


def test_a_small_run_trains_calibrates_ships_and_evaluates(tmp_path):
    splits = train_verifier.load_splits()
    rows = [
        r for label in train_verifier.LABELS for r in [r for r in splits["train"] if r["label"] == label][:5]
    ] + splits["train"][:1]
    run, ship = tmp_path / "run", tmp_path / "ship"
    figures = train_verifier.train(rows, run, epochs=1, batch_size=8, max_length=64, lr=5e-5, device="cpu", seed=0)
    assert figures["pairs"] == 16 and figures["pairs_per_s"] > 0
    (run / "training_report.json").write_text(json.dumps({"training": figures}))
    report = verifier_eval.calibrate_and_evaluate(
        run,
        splits,
        rows_per_split=8,
        device="cpu",
        seed=0,
        log=lambda line: None,
        ship_to=ship,
        diagram=tmp_path / "reliability.png",
        measure_throughput=False,
    )

    calibration = report["calibration"]
    assert calibration["temperature"] > 0 and 0.5 <= calibration["threshold"] <= 0.95
    config = json.loads((ship / "config.json").read_text())
    assert config["id2label"] == {"0": "support", "1": "contradict", "2": "neither"}
    assert config["torch_dtype" if "torch_dtype" in config else "dtype"] == "float16"
    windows = report["windows"]["calibration"]
    assert windows["temperature"] > 0 and 0.5 <= windows["threshold"] <= 0.95
    assert config["zocrates_verifier"]["threshold"] == windows["threshold"]
    assert config["zocrates_verifier"]["whole_passage_threshold"] == calibration["threshold"]
    assert config["zocrates_verifier"]["window_temperature"] == windows["temperature"]
    assert json.loads((ship / "tokenizer_config.json").read_text())["model_max_length"] == 256
    assert set(report["evaluation"]) == {"calibration", *train_verifier.EVAL_SPLITS}
    for found in report["evaluation"].values():
        assert found["pairs"] == 8
        assert {"trained", "heuristic", "lexical_overlap", "number_probe"} <= set(found)
        assert 0 <= found["trained"]["ece"] <= 1
    assert (tmp_path / "reliability.png").stat().st_size > 1000

    rates = verifier_eval.throughput(
        ship, splits["eval_wice"], dtypes=("float32", "int8"), threads=(1,), pairs=4, batch=2
    )
    assert [(r["dtype"], r["pairs"]) for r in rates] == [("float32", 4), ("int8", 4)]
    assert all(r["pairs_per_s"] > 0 for r in rates)
    # kept by the CPU that measured them, beside another CPU's earlier rates
    section = {"throughput_by_cpu": {"Other CPU": {"measured": "earlier", "rates": [{"pairs_per_s": 1.0}]}}}
    verifier_eval.record_throughput(section, rates, "python -m tools.verifier_eval --throughput-only")
    assert section["throughput"] == rates and set(section["throughput_by_cpu"]) == {"Other CPU", rates[0]["cpu"]}
    assert section["throughput_by_cpu"][rates[0]["cpu"]]["rates"] == rates


def test_temperature_fit_recovers_a_known_temperature():
    rng = random.Random(0)
    logits, labels = [], []
    for _ in range(3000):
        true = [rng.gauss(0, 1.5) for _ in range(3)]
        weights = [math.exp(v) for v in true]
        label = rng.choices(range(3), weights)[0]
        logits.append([3.0 * v for v in true])  # three times too confident
        labels.append(label)
    assert abs(verifier_eval.fit_temperature(logits, labels) - 3.0) < 0.3


def test_threshold_is_chosen_within_the_settings_range():
    scores = [0.1, 0.3, 0.55, 0.62, 0.7, 0.9, 0.97]
    positive = [False, False, False, True, True, True, True]
    assert verifier_eval.pick_threshold(scores, positive) == 0.56
    assert verifier_eval.pick_threshold([0.1, 0.2], [True, False]) == 0.5


def test_number_swaps_become_contradictions_of_the_same_group():
    rows = [
        {
            "claim": "The trial enrolled 120 adults.",
            "label": "support",
            "group": "g1",
            "passage": "A trial enrolled 120 adults with asthma.",
            "source": "scifact_train",
        }
    ]
    swapped = train_verifier.number_swaps(rows, seed=0)
    assert len(swapped) == 1 and swapped[0]["label"] == "contradict"
    assert swapped[0]["group"] == "g1" and "120" not in swapped[0]["claim"]


def test_bfloat16_training_keeps_float32_weights_and_says_so(tmp_path):
    import torch
    from safetensors.torch import load_file

    rows = train_verifier.load_splits()["train"][:8]
    figures = train_verifier.train(
        rows, tmp_path, epochs=1, batch_size=4, max_length=48, lr=5e-5, device="cpu", seed=0, bf16=True
    )
    assert figures["bf16"] is True and figures["pairs"] == 8
    weights = load_file(tmp_path / "model.safetensors")
    assert {w.dtype for w in weights.values()} == {torch.float32}
    assert torch.isfinite(weights["classifier.weight"]).all()
