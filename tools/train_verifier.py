"""Train, calibrate, evaluate and ship the verifier's default model: a 3-label claim-passage
cross-encoder (support, contradict, neither) fine-tuned from the shipped all-MiniLM-L6-v2.

Data: bench/data/verifier (built by `python -m tools.verifier_data.build`; see its MANIFEST.md).
The passage is the first text and the claim the second (NLI order, as the verifier's local-torch
backend feeds them). Stages, in order:

1. train: one epoch (by default) of cross-entropy over the three labels on a seeded subset of
   the train split, length-bucketed batches, plus number-swap negatives built from that subset's
   supported claims (a number the passage states, changed: label contradict);
1b. a second stage from that model (`--domain-epochs`, 2 by default): SciFact's train pairs, the
   number probe built from their passages and as many pairs of the other sources (`domain_rows`),
   at up to 192 tokens: the first stage sees few scientific sentences (1,310 of 36,366 pairs);
   and (`--contrast`, the default since v2) SciFact's supported pairs turned into contradictions
   by reversing a direction of effect or negating one side (`tools.verifier_contrast`), as many
   of the other sources' beside the pairs they came from, and pairs to even the three labels
   (docs/verifier-model.md, "Contrastive pairs"); `--no-contrast` is v1's second stage;
2. calibrate: one temperature for the three logits, fitted by log-loss on the calibration split
   only; the threshold is chosen on the calibration split only (`tools.verifier_eval`);
3. evaluate: every eval split, never trained or calibrated on, beside the heuristic and plain
   lexical overlap, the number probe, and a reliability diagram;
4. ship (`--ship DIR`): the checkpoint with the temperature folded into its classifier, in
   float16 safetensors, which the verifier loads as its default.

    make train-verifier VERIFIER_TRAIN_FLAGS="--threads 1"   # ~37 min of training on 2 shared cores
    .venv/bin/python -m tools.train_verifier --out /tmp/x --limit 16 --eval-rows 8 --no-throughput \\
        --diagram /tmp/x/reliability.png                          # a smoke run

One epoch over the whole train split at 128 tokens is what fits this 2-core machine (measured
first on 200 pairs while another process held one core: 21.6 pairs/s with one torch thread and
length-bucketed batches; unbucketed, 11.3 with one thread and 3.2 with two). A lab with a GPU reruns it with `--device cuda --epochs 3 --max-length 256
--domain-epochs 3`; nothing else changes (the `--limit` flag takes a subset where even one epoch does not fit).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from tools.cross_encoder import add_fit_arguments, fine_tune, fit_options
from tools.training_data import read_splits

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench" / "data" / "verifier"
LABELS = ("support", "contradict", "neither")
EVAL_SPLITS = ("eval_scifact_heldout", "eval_wice", "eval_fever_symmetric")
#: The window of the shipped model (tokens of passage and claim together): its tokenizer says so,
#: and the verifier's backend never asks for more.
SERVED_MAX_LENGTH = 256


def load_splits() -> dict[str, list[dict]]:
    return read_splits(DATA)


def number_swaps(rows: list[dict], seed: int) -> list[dict]:
    """Supported claims with one number that the passage states changed, as `contradict` rows
    (the verifier's number-swap recipe, `zocrates_verifier.domain.calibration.number_swaps`)."""
    from zocrates_verifier.domain.calibration import LabeledPair
    from zocrates_verifier.domain.calibration import number_swaps as swaps

    by_text = {}
    pairs = []
    for i, r in enumerate(rows):
        if r["label"] == "support":
            pairs.append(LabeledPair(i, r["claim"], r["passage"], 1))
    out = []
    for swapped in swaps(pairs, seed=seed):
        source = rows[swapped.claim_id]
        key = (swapped.claim, swapped.passage)
        if key not in by_text:
            by_text[key] = True
            out.append(
                {
                    "claim": swapped.claim,
                    "passage": swapped.passage,
                    "label": "contradict",
                    "source": f"{source['source']}+number_swap",
                    "group": source["group"],
                }
            )
    return out


def training_rows(train: list[dict], limit: int | None, seed: int, with_swaps: bool) -> list[dict]:
    """A seeded subset of the train split (the build writes rows by source: a limit takes from
    all), plus its number swaps, shuffled."""
    rows = list(train)
    random.Random(seed).shuffle(rows)
    rows = rows[:limit] if limit else rows
    if with_swaps:
        rows = rows + number_swaps(rows, seed)
        random.Random(seed + 1).shuffle(rows)
    return rows


def domain_rows(train: list[dict], seed: int, contrast: bool = False) -> list[dict]:
    """The second stage's rows: every SciFact train pair, the number probe built from their
    passages (a sentence stating a number quoted as a supported claim, and the same sentence
    with the number changed as a contradicted one), and as many pairs of the other sources,
    drawn at random, so the first stage is not forgotten. With `contrast`, also every SciFact
    supported pair reversed or negated (`tools.verifier_contrast`), and as many such pairs of
    the other sources, each beside the supported pair it was made from, and further supported
    and "neither" pairs of the other sources until the three labels are even. All from the train
    split."""
    from tools.verifier_contrast import contrast_rows
    from tools.verifier_eval import number_probe_rows

    scifact = [r for r in train if r["source"] == "scifact_train"]
    by_passage = {r["passage"]: r for r in scifact}
    quoted, swapped = number_probe_rows(scifact)
    probe = [
        r | {"source": "scifact_train+number_probe", "group": by_passage[r["passage"]]["group"]}
        for r in quoted + swapped
    ]
    rest = [r for r in train if r["source"] != "scifact_train"]
    random.Random(seed).shuffle(rest)
    rows = scifact + probe + rest[: len(scifact) + len(probe)]
    if contrast:
        turned = contrast_rows(scifact)
        others = [r for r in rest[len(scifact) + len(probe) :] if r["label"] == "support"]
        for r in others:
            if sum(t["source"].startswith("scifact") for t in turned) * 2 <= len(turned):
                break
            made = contrast_rows([r])
            if made:
                turned += made
                rows.append(r)
        rows += turned
        # every label as often as "contradict": the contrasts alone tilt the stage to it, and a
        # stage short of "neither" moves probability off it that one temperature cannot give back
        used = {id(r) for r in rows}
        contradicted = sum(r["label"] == "contradict" for r in rows)
        for label in ("support", "neither"):
            spare = [r for r in rest if r["label"] == label and id(r) not in used]
            rows += spare[: max(contradicted - sum(r["label"] == label for r in rows), 0)]
    random.Random(seed + 2).shuffle(rows)
    return rows


def train(rows: list[dict], out: Path, **options) -> dict:
    """Fine-tune on `rows` (from the shipped MiniLM, or from the checkpoint `init`) and save the
    model (labels named in LABELS' order) to `out`; `options` are `fine_tune`'s (`FIT_OPTIONS`,
    and `max_seconds`, `log` or `init` where given)."""
    import torch

    figures = fine_tune(
        [(r["passage"], r["claim"]) for r in rows],
        [LABELS.index(r["label"]) for r in rows],
        out,
        num_labels=len(LABELS),
        loss=torch.nn.CrossEntropyLoss(),
        id2label=dict(enumerate(LABELS)),
        bucket=True,
        tokenizer_max_length=SERVED_MAX_LENGTH,
        **options,
    )
    figures["number_swaps"] = sum(r["source"].endswith("+number_swap") for r in rows)
    figures["max_length"] = options["max_length"]
    figures["labels"] = {label: sum(r["label"] == label for r in rows) for label in LABELS}
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_fit_arguments(
        parser, max_length=128, max_length_help="training tokens of passage and claim together (p99 of train is 113)"
    )
    parser.add_argument(
        "--limit", type=int, default=0, help="train on this many pairs of the train split (0 = all 36,366)"
    )
    parser.add_argument(
        "--domain-epochs",
        type=int,
        default=2,
        help="then this many epochs of the second stage (`domain_rows`: SciFact "
        "train, its number probe, as many other pairs)",
    )
    parser.add_argument(
        "--contrast",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add reversed and negated contradictions (tools.verifier_contrast) to the second stage and even "
        "its three labels (the shipped model, v2; --no-contrast is v1's second stage: docs/verifier-model.md)",
    )
    parser.add_argument("--domain-max-length", type=int, default=192, help="second-stage tokens (SciFact's p90 is 107)")
    parser.add_argument(
        "--only-domain", action="store_true", help="run the second stage on the first-stage model already in --out"
    )
    parser.add_argument(
        "--no-number-swaps", action="store_true", help="leave out the number-swap contradictions built from the subset"
    )
    parser.add_argument(
        "--max-minutes", type=float, default=None, help="stop training after this long (the report says so)"
    )
    parser.add_argument("--eval-rows", type=int, default=0, help="pairs of each calibration and eval split (0 = all)")
    parser.add_argument(
        "--skip-training", action="store_true", help="calibrate and evaluate the model already in --out"
    )
    parser.add_argument("--only-training", action="store_true")
    parser.add_argument("--ship", type=Path, default=None, help="write the calibrated float16 checkpoint here")
    parser.add_argument(
        "--diagram",
        type=Path,
        default=ROOT / "docs" / "verifier-reliability.png",
        help="where the reliability diagram is written",
    )
    parser.add_argument(
        "--no-throughput", action="store_true", help="skip the CPU throughput measurement (float32, bfloat16, int8)"
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads (0 = one per core); 1 is faster on a shared machine"
    )
    args = parser.parse_args(argv)
    if args.limit < 0:
        parser.error("--limit must be 0 (all) or more")

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    log_file = args.out / "training.log"

    def log(line: str) -> None:
        stamped = f"{time.strftime('%H:%M:%S')} {line}"
        print(stamped, flush=True)
        with log_file.open("a") as f:
            f.write(stamped + "\n")

    splits = load_splits()
    fit = fit_options(args)
    command = " ".join(["python -m tools.train_verifier"] + (argv if argv is not None else sys.argv[1:]))
    report_path = args.out / "training_report.json"

    def save(report: dict) -> None:
        report_path.write_text(json.dumps(report, indent=1) + "\n")

    report = json.loads(report_path.read_text()) if args.skip_training and report_path.exists() else {}
    if not (args.skip_training or args.only_domain):
        rows = training_rows(splits["train"], args.limit or None, args.seed, with_swaps=not args.no_number_swaps)
        log(
            f"training on {len(rows)} pairs, {args.epochs} epoch(s), max length {args.max_length}, "
            f"{torch.get_num_threads()} thread(s), device {args.device}"
        )
        report["training"] = train(
            rows, args.out, **fit, max_seconds=args.max_minutes * 60 if args.max_minutes else None, log=log
        )
        report["training"] |= {
            "threads": torch.get_num_threads(),
            "device": args.device,
            "lr": args.lr,
            "batch_size": args.batch_size,
            "limit": args.limit,
            "seed": args.seed,
            "command": command,
        }
        save(report)
        log(json.dumps(report["training"]))
    if args.only_domain:
        report = json.loads(report_path.read_text())
    if (args.domain_epochs and not args.skip_training) or args.only_domain:
        rows = domain_rows(splits["train"], args.seed, contrast=args.contrast)
        log(
            f"second stage: {len(rows)} pairs, {args.domain_epochs} epoch(s), max length "
            f"{args.domain_max_length}, from the first-stage model in {args.out}"
        )
        stage = fit | {"epochs": args.domain_epochs, "max_length": args.domain_max_length}
        report["domain"] = train(rows, args.out, **stage, log=log, init=args.out)
        report["domain"]["command"] = command
        save(report)
        log(json.dumps(report["domain"]))
    if args.only_training:
        return

    from tools import verifier_eval

    report |= verifier_eval.calibrate_and_evaluate(
        args.out,
        splits,
        rows_per_split=args.eval_rows,
        device=args.device,
        seed=args.seed,
        log=log,
        ship_to=args.ship,
        diagram=args.diagram,
        measure_throughput=not args.no_throughput,
    )
    save(report)
    if args.ship:
        (args.ship / "training_report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
