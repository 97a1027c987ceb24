"""Local checkpoints: any Hugging Face sequence-classification NLI or cross-encoder, or Laya.

`load_model(path)` picks the loader by what the directory holds:

- `rl_agent_config.json`: a Laya checkpoint, answered through the `laya` package (its own
  `noul` head reads the question), only when `laya` is importable;
- otherwise a `config.json` for `AutoModelForSequenceClassification` (offline, no download).
  Support is the entailment probability: the label whose name in `config.id2label` contains
  "entail" or "support" (softmax over all labels); a single-logit cross-encoder is read
  through a sigmoid; an unnamed two-label head takes label 1 as "supported".

The premise is the passage and the hypothesis the claim (NLI order). Half precision on a GPU;
`torch.inference_mode` around every forward pass. On the CPU, in float32 or bfloat16, the
checkpoint is converted to OpenVINO when it loads, given more than one thread (`runtime`, default
`auto`: about two seconds), which scored 1.3-1.4x as many pairs a second as torch in the same
precision (docs/verifier-model.md).

A micro-batch mixes lengths (a 30-token pair beside a 500-token one), and one forward pass pads
every row to the longest: on the bench's SciFact turns that computed 2.3 padded tokens per real
one. So `predict` cuts the length-sorted rows into passes (`plan_passes`), each padded only to its
own longest row, wherever the padding saved outweighs the fixed cost of one more pass.
"""

from __future__ import annotations

import json
import logging
import re
import types
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from zocrates_runtime.device import OpenVINOOnCPU, cpu_has_bfloat16, openvino_on_cpu
from zocrates_verifier.adapters.backends.base import BatchModel, Pair, claim_parts
from zocrates_verifier.domain import windows
from zocrates_verifier.domain.rules import ScoreRules

log = logging.getLogger(__name__)

#: The verifier's default model: a 3-label (support, contradict, neither) MiniLM cross-encoder
#: trained by `tools/train_verifier.py` and shipped in this package (docs/verifier-model.md).
#: Defined here, not in `config`, because the GPU bench imports the models without pydantic.
SHIPPED_MODEL_DIR = Path(__file__).resolve().parents[2] / "model"


def shipped_model_present(directory: Path | None = None) -> bool:
    """Whether the shipped checkpoint's files are there (a checkout without them, or a build
    that left package data out, falls back to the heuristic)."""
    directory = SHIPPED_MODEL_DIR if directory is None else Path(directory)
    return (directory / "config.json").is_file() and (directory / "model.safetensors").is_file()


def checkpoint_name(path: Path) -> str:
    """The name a checkpoint gives itself (`zocrates_verifier.name` in its config.json, which
    the training script writes), else its directory's name."""
    try:
        config = json.loads((Path(path) / "config.json").read_text())
        return str((config.get("zocrates_verifier") or {}).get("name") or Path(path).name)
    except (OSError, ValueError, AttributeError):
        return Path(path).name


#: The fixed cost of one forward pass, in padded tokens' worth of compute. On CPU a pass of a
#: MiniLM-sized model is about 100 small ops, each a thread fork-join: a few milliseconds, the
#: time of some 50 tokens. On an accelerator the kernel launches of a pass are worth far more
#: tokens, so a batch is cut only where it is very ragged.
PASS_OVERHEAD_TOKENS = {"cpu": 64}
ACCELERATOR_PASS_OVERHEAD_TOKENS = 2048


def plan_passes(lengths: Sequence[int], overhead: int) -> list[list[int]]:
    """Row indices grouped into forward passes, with the fewest padded tokens plus `overhead`
    per pass.

    Each pass is a run of the length-sorted rows padded to its last (longest) row; the best cut
    is found exactly by dynamic programming over the sorted rows (at most a few hundred).
    """
    import numpy as np

    order = np.argsort(np.asarray(lengths), kind="stable")
    widths = np.asarray(lengths)[order]
    best = np.zeros(len(widths) + 1)  # best[end]: cheapest plan for sorted rows [0, end)
    start = np.zeros(len(widths) + 1, dtype=int)
    for end in range(1, len(widths) + 1):
        # the last pass holds sorted rows [first, end), all padded to widths[end - 1]
        costs = best[:end] + (end - np.arange(end)) * widths[end - 1] + overhead
        start[end] = int(costs.argmin())
        best[end] = costs[start[end]]
    passes, end = [], len(widths)
    while end > 0:
        passes.append(order[start[end] : end].tolist())
        end = start[end]
    return passes[::-1]


def resolve_dtype(dtype: str, device: str):
    import torch

    if dtype == "auto":
        # Half precision where the hardware is built for it. On a CPU with native bfloat16 the
        # shipped model runs three times faster in it and scores the held-out splits within
        # 0.004 of float32 (docs/verifier-model.md); elsewhere bfloat16 is emulated and slow.
        if device.split(":")[0] in ("cuda", "xpu", "mps"):
            return torch.float16
        return torch.bfloat16 if cpu_has_bfloat16() else torch.float32
    return getattr(torch, dtype)


def support_index(id2label: dict[Any, str], num_labels: int) -> int | None:
    """Which logit means "supported"; None for a single-logit (sigmoid) head."""
    if num_labels == 1:
        return None
    for key, name in id2label.items():
        words = [w for w in re.split(r"[^a-z]+", str(name).lower()) if w]
        if any(w in ("not", "no", "non") for w in words):
            continue  # "not_supported", "non-entailment"
        if any(w.startswith("entail") or w in ("support", "supports", "supported") for w in words):
            return int(key)
    generic = all(str(name).upper().startswith("LABEL_") for name in id2label.values())
    if num_labels == 2 and generic:
        return 1
    raise ValueError(
        f"cannot tell which label means 'supported' among {dict(id2label)}; "
        "name it 'entailment' or 'supported' in the checkpoint's config.json "
        "id2label"
    )


def contradict_index(id2label: dict[Any, str]) -> int | None:
    """Which logit means "contradicted" (a 3-way NLI head), if any."""
    for key, name in id2label.items():
        if str(name).lower().startswith("contradict"):
            return int(key)
    return None


#: A passage is also scored whole when, with the claim, it is at most this long: the length the
#: shipped model was trained at (longer premises read as "neither" to it).
WHOLE_PASSAGE_TOKENS = 128
#: What a quote scores at least (`windows.raise_quotes`).
VERBATIM_SUPPORT = windows.VERBATIM_SUPPORT


class SequenceClassifierModel(BatchModel):
    """A Hugging Face sequence-classification checkpoint scored by the micro-batcher.

    A pair is scored as one row per claim part (a compound pair's clauses) and per window of
    its passage (`zocrates_verifier.domain.windows`); `max_windows=1` scores the whole passage
    as one row. A joint pair's rows are `windows.joint_windows`: each holds a window of every
    passage it joins, each cut to an equal share of the row. The windows' distributions are aggregated, then sharpened or softened by the
    checkpoint's window temperature (`zocrates_verifier.window_temperature` in its config.json,
    fitted on the calibration split by `tools.verifier_eval`; 1 when absent).
    """

    provider = "local"

    def __init__(
        self,
        path: Path,
        *,
        dtype: str = "auto",
        max_seq_len: int = 512,
        name: str = "",
        max_windows: int = windows.MAX_WINDOWS,
        verbatim_rule: bool = True,
        number_rule: bool = True,
        runtime: str = "auto",
    ) -> None:
        self.path = Path(path)
        self.dtype_name = dtype
        self.runtime = runtime
        self.max_seq_len = max_seq_len
        self.model = name or checkpoint_name(self.path)
        self.max_windows = max_windows
        self.rules = ScoreRules(verbatim=verbatim_rule, numbers=number_rule)
        self.device = "cpu"
        self._net = None
        self._tokenizer = None
        self._index: int | None = None
        self._contradict: int | None = None
        self.window_temperature = 1.0

    def setup(self, device: str) -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.device = device
        int8 = self.dtype_name == "int8"
        if int8 and device != "cpu":
            raise ValueError(
                f"dtype int8 (dynamic quantisation) runs on the CPU only, not on "
                f"{device}; use float16 there, or set the device to cpu"
            )
        dtype = resolve_dtype("float32" if int8 else self.dtype_name, device)
        self._tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        openvino = self._runs_openvino(device, "int8" if int8 else str(dtype).removeprefix("torch."))
        # OpenVINO converts float32 weights and computes in the precision it is asked for
        load_as = resolve_dtype("float32", device) if openvino else dtype
        net = AutoModelForSequenceClassification.from_pretrained(self.path, local_files_only=True, dtype=load_as)
        if int8:
            import torch

            # int8 weights for every Linear layer, activations quantised per batch
            net = torch.ao.quantization.quantize_dynamic(net, {torch.nn.Linear}, dtype=torch.qint8)
            dtype = "int8"
        net = net.eval()
        self.runtime_used = "torch"
        if openvino:
            try:
                self._net = _openvino_classifier(net, self._tokenizer, str(dtype).removeprefix("torch."))
                self.runtime_used = "openvino"
            except Exception as exc:
                if self.runtime == "openvino":
                    raise
                # a speed-up, not a requirement: torch scores the same pairs
                log.warning(
                    "the verifier model did not convert to OpenVINO (%s: %s); torch runs it", type(exc).__name__, exc
                )
                net = net.to(dtype=dtype)  # loaded in float32 for the conversion
        if self.runtime_used == "torch":
            self._net = net.to(device)
        self._index = support_index(net.config.id2label, net.config.num_labels)
        self._contradict = contradict_index(net.config.id2label) if self._index is not None else None
        own = getattr(net.config, "zocrates_verifier", None) or {}
        self.window_temperature = float(own.get("window_temperature") or 1.0) if self.max_windows > 1 else 1.0
        # Read through windows the window calibration's threshold applies, read whole the model's own.
        whole = own.get("whole_passage_threshold", own.get("threshold"))
        calibrated = own.get("threshold") if self.max_windows > 1 else whole
        self.calibrated_threshold = float(calibrated) if calibrated is not None else None
        self._dtype = dtype
        self.max_seq_len = min(
            self.max_seq_len, getattr(self._tokenizer, "model_max_length", self.max_seq_len) or self.max_seq_len
        )

    def _runs_openvino(self, device: str, dtype: str) -> bool:
        """Whether `runtime` has the model run by OpenVINO: `openvino` asks for it (on the CPU,
        in float32 or bfloat16); `auto` takes it there when the package is installed and the
        model has more than one thread (`cpu_threads`), where it scored 1.3-1.4x torch's pairs/s.
        With one thread, the default beside the other services, bfloat16 gained 8 % for about
        170 MB more memory, so torch runs it (docs/verifier-model.md)."""
        import importlib.util

        import torch

        fits = device == "cpu" and dtype in ("float32", "bfloat16")
        if self.runtime == "openvino":
            if not fits:
                raise ValueError(
                    f"runtime openvino runs float32 or bfloat16 on the CPU, not {dtype} on {device}; "
                    "set ZOCRATES_VERIFIER_RUNTIME to auto or torch"
                )
            if importlib.util.find_spec("openvino") is None:
                raise ValueError("runtime openvino needs the openvino package; set ZOCRATES_VERIFIER_RUNTIME to torch")
            return True
        return (
            self.runtime == "auto"
            and fits
            and torch.get_num_threads() > 1
            and importlib.util.find_spec("openvino") is not None
        )

    def _claims(self, pair: Pair) -> list[str]:
        return claim_parts(pair.claim) if pair.compound else [pair.claim]

    def _short(self, claim: str, text: str) -> bool:
        return (len(claim) + len(text)) // 4 + 3 <= min(self.max_seq_len, WHOLE_PASSAGE_TOKENS)

    def _windows(
        self, claim: str, passage: str, quoted: bool = False, starts: tuple[int, ...] = ()
    ) -> tuple[windows.Window, ...]:
        if len(starts) > 1:
            # A joint pair: every row holds text of every passage, within what the model reads
            # (about three characters a token, less the claim).
            budget = (self.max_seq_len - 3) * 3 - len(claim)
            return _joint_windows_of(
                claim, passage, starts, self._short(claim, passage), max(1, self.max_windows), budget
            )
        if quoted:
            # The answer writer quoted a unit of this passage: the window that shares the most
            # words with it is that unit, where the passage supports it. One row, not
            # `max_windows`: the score is reported beside the quote, not decided by it.
            return _windows_of(claim, passage, False, 1)
        if self.max_windows <= 1:
            return (windows.Window(passage, 0, max(1, len(windows.sentences(passage)))),)
        return _windows_of(claim, passage, self._short(claim, passage), self.max_windows)

    def cost(self, pair: Pair) -> int:
        # About four characters a token; tokenizing twice would cost more than the estimate
        # is worth. One row per claim part and window.
        return sum(
            min(self.max_seq_len, (len(claim) + len(window.text)) // 4 + 3)
            for claim in self._claims(pair)
            for window in self._windows(claim, pair.source_text, pair.quoted, pair.passage_starts)
        )

    def distributions(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[tuple[float, float, float]]:
        """(support, contradict, neither) of each (premise, hypothesis) row, in length-alike
        passes (`plan_passes`). A head without a contradiction label gives 0 for it."""
        import torch

        # longest_first trims the passage (the longer text) first and, unlike only_first,
        # never fails on a claim that alone is longer than the model's window.
        encoded = self._tokenizer(
            list(premises), list(hypotheses), truncation="longest_first", max_length=self.max_seq_len
        )
        rows = [dict(zip(encoded.keys(), values)) for values in zip(*encoded.values())]
        found: list[tuple[float, float, float]] = [(0.0, 0.0, 1.0)] * len(rows)
        overhead = PASS_OVERHEAD_TOKENS.get(self.device.split(":")[0], ACCELERATOR_PASS_OVERHEAD_TOKENS)
        for members in plan_passes([len(row["input_ids"]) for row in rows], overhead):
            batch = self._tokenizer.pad([rows[i] for i in members], return_tensors="pt")
            with torch.inference_mode():
                logits = self._net(**batch.to(self.device)).logits.float()
            if self._index is None:
                support = torch.sigmoid(logits[:, 0])
                contradict = torch.zeros_like(support)
            else:
                probabilities = torch.softmax(logits, dim=-1)
                support = probabilities[:, self._index]
                contradict = probabilities[:, self._contradict] if self._contradict is not None else 0 * support
            for i, s, c in zip(members, support.cpu().tolist(), contradict.cpu().tolist()):
                found[i] = (s, c, max(0.0, 1.0 - s - c))
        return found

    def window_distributions(
        self, pairs: Sequence[Pair]
    ) -> list[tuple[windows.Distribution, tuple[windows.Span, ...]]]:
        """Each pair's (support, contradict, neither) before the window temperature: of its
        best-supporting window (`windows.aggregate`), over its claim parts; with where that window
        supports the claim part in the passage (`windows.window_evidence`)."""
        owners, premises, hypotheses = [], [], []
        for i, pair in enumerate(pairs):
            for part, claim in enumerate(self._claims(pair)):
                for window in self._windows(claim, pair.source_text, pair.quoted, pair.passage_starts):
                    owners.append((i, part, window))
                    premises.append(window.text)
                    hypotheses.append(claim)
        by_part: dict[tuple[int, int], list] = {}
        for (i, part, window), row in zip(owners, self.distributions(premises, hypotheses)):
            by_part.setdefault((i, part), []).append((window, row))
        best: list[tuple[windows.Distribution, tuple[windows.Span, ...]]] = [((0.0, 0.0, 1.0), ())] * len(pairs)
        for (i, part), scored in by_part.items():
            window, found = windows.best_window(scored)
            if found[0] >= best[i][0][0]:
                claim = self._claims(pairs[i])[part]
                best[i] = (found, windows.window_evidence(claim, pairs[i].source_text, window))
        return best

    def predict(self, pairs: Sequence[Pair]) -> list[float]:
        support: list[float] = [
            windows.Support(self._support(d), spans) for d, spans in self.window_distributions(pairs)
        ]
        self.rules.apply(pairs, support)
        return support

    def _support(self, distribution: tuple[float, float, float]) -> float:
        """P(support) of an aggregated distribution at the window temperature."""
        if self.window_temperature == 1.0:
            return distribution[0]
        powered = [max(p, 1e-12) ** (1.0 / self.window_temperature) for p in distribution]
        return powered[0] / sum(powered)

    def describe(self) -> dict[str, Any]:
        return {
            "dtype": str(getattr(self, "_dtype", self.dtype_name)).removeprefix("torch."),
            "runtime": getattr(self, "runtime_used", self.runtime),
            "support_label": self._index,
            "checkpoint": str(self.path),
            "max_windows": self.max_windows,
            "window_temperature": self.window_temperature,
            "calibrated_threshold": self.calibrated_threshold,
            **self.rules.describe(),
        }


def _openvino_classifier(net, tokenizer, dtype: str):
    """`net` converted to OpenVINO and compiled for this CPU, in `dtype` (float32 or bfloat16),
    with as many threads as torch uses: called like the torch model, it returns `.logits`."""
    import openvino
    import torch

    example = dict(tokenizer(["a passage"] * 2, ["a claim"] * 2, padding=True, return_tensors="pt"))
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on the model's code, not on its use
        converted = openvino.convert_model(net, example_input=example)
    return _OpenVINOClassifier(openvino_on_cpu(converted, bfloat16=dtype == "bfloat16"), list(example), net.config)


class _OpenVINOClassifier:
    """The compiled classifier, called as the torch model is. `config` is the checkpoint's."""

    def __init__(self, compiled: OpenVINOOnCPU, inputs: list[str], config):
        self._compiled = compiled
        self._inputs = inputs
        self.config = config

    def __call__(self, **batch):
        import torch

        logits = self._compiled.infer({name: batch[name].numpy() for name in self._inputs})[0]
        return types.SimpleNamespace(logits=torch.from_numpy(logits.copy()))  # the request reuses its buffer


@lru_cache(maxsize=1024)
def _windows_of(claim: str, passage: str, whole_fits: bool, max_windows: int) -> tuple[windows.Window, ...]:
    # `cost` (on the event loop) and `predict` (on the worker) ask for the same windows.
    return tuple(windows.windows(claim, passage, whole_fits=whole_fits, max_windows=max_windows))


@lru_cache(maxsize=256)
def _joint_windows_of(
    claim: str, text: str, starts: tuple[int, ...], whole_fits: bool, max_windows: int, max_chars: int
) -> tuple[windows.Window, ...]:
    return tuple(
        windows.joint_windows(
            claim, text, starts, whole_fits=whole_fits, max_chars=max(200, max_chars), max_windows=max_windows
        )
    )


class LayaModel(BatchModel):
    """A Laya checkpoint through the `laya` package: its `noul` head answers our question.

    `laya.load(directory)` reads a local checkpoint (`rl_agent_config.json`, `model.safetensors`,
    `tokenizer/`, `encoder/`), offline. Laya picks its own precision (autocast to the checkpoint's
    `amp_dtype` on CUDA, fp32 on CPU unless `LAYA_CPU_AMP=bf16`), so `dtype` does not apply, and
    it falls back to CPU when the device cannot take the model: `device` is where it really runs.
    One `predict_batch` call is one forward pass (no `batch_size`): our micro-batcher has already
    sized and length-sorted the batch.
    """

    provider = "local"

    def __init__(self, path: Path, *, name: str = "", max_seq_len: int = 512) -> None:
        self.path = Path(path)
        self.model = name or f"laya:{self.path.name}"
        self.max_seq_len = max_seq_len
        self.device = "cpu"
        self._agent = None

    def setup(self, device: str) -> None:
        import laya

        # An absolute path: laya.load reads a bare word as a registry alias.
        self._agent = laya.load(str(self.path.resolve()), device=device)
        self.device = str(self._agent.device)
        # Never ask for a longer window than the checkpoint was built for.
        self.max_seq_len = min(self.max_seq_len, int(self._agent.cfg.get("max_len", 512)))

    def cost(self, pair: Pair) -> int:
        # Laya's row is [question head][state as JSON]: about four characters a token plus the
        # head (question and two option texts, about 40 tokens).
        return min(self.max_seq_len, (len(pair.claim) + len(pair.source_text)) // 4 + 48)

    def predict(self, pairs: Sequence[Pair]) -> list[float]:
        # A Laya call shares one question set, so single and compound pairs run apart.
        out = [0.0] * len(pairs)
        for compound in (False, True):
            idx = [i for i, p in enumerate(pairs) if p.compound == compound]
            if not idx:
                continue
            states = [{"source_text": pairs[i].source_text, "claim": pairs[i].claim} for i in idx]
            questions = {"support": {"type": "noul", "instructions": pairs[idx[0]].question}}
            results = self._agent.predict_batch(states, questions, max_len=self.max_seq_len)
            for i, result in zip(idx, results):
                out[i] = float(result["answers"]["support"]["noul"])
        return out

    def describe(self) -> dict[str, Any]:
        agent = self._agent
        return {
            "dtype": str(agent.dtype).removeprefix("torch.") if agent else "",
            "amp": bool(agent.amp_enabled) if agent else False,
            "checkpoint": str(self.path),
            "laya_device": self.device,
        }


def is_laya_checkpoint(path: Path) -> bool:
    return (Path(path) / "rl_agent_config.json").exists()


def load_model(
    path: Path,
    *,
    dtype: str = "auto",
    max_seq_len: int = 512,
    name: str = "",
    max_windows: int = windows.MAX_WINDOWS,
    verbatim_rule: bool = True,
    number_rule: bool = True,
    runtime: str = "auto",
) -> BatchModel:
    """The `BatchModel` for a checkpoint directory (not loaded yet: call `setup(device)`)."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(
            f"checkpoint directory {path} does not exist; set ZOCRATES_VERIFIER_MODEL_DIR to a local checkpoint"
        )
    if is_laya_checkpoint(path):
        try:
            import laya  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(
                f"{path} is a Laya checkpoint but the `laya` package is not "
                "installed; pip install laya, or use an NLI checkpoint"
            ) from exc
        return LayaModel(path, name=name, max_seq_len=max_seq_len)
    config = path / "config.json"
    if not config.exists():
        raise FileNotFoundError(
            f"{path} has no config.json: expected a Hugging Face "
            "sequence-classification checkpoint or a Laya checkpoint"
        )
    architectures = json.loads(config.read_text()).get("architectures") or []
    if architectures and not any("SequenceClassification" in a for a in architectures):
        raise ValueError(
            f"{path} holds {architectures}, not a sequence-classification model (an NLI or cross-encoder checkpoint)"
        )
    return SequenceClassifierModel(
        path,
        dtype=dtype,
        max_seq_len=max_seq_len,
        name=name,
        max_windows=max_windows,
        verbatim_rule=verbatim_rule,
        number_rule=number_rule,
        runtime=runtime,
    )
