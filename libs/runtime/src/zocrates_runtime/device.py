"""Which torch device this process computes on, decided by a real tensor operation.

`torch.cuda.is_available()` can say yes on a machine whose driver cannot run a kernel (a
capability mismatch, exhausted device memory, a broken install), and a failing driver can
take the whole process down. So each candidate is tried in a child process that runs
`(torch.zeros(1, device=d) + 1).item()`: cuda, then mps (Apple silicon), then xpu (Intel),
then cpu. A child that crashes or hangs costs only that candidate.

One probe for every service that computes with torch (the verifier's model, retrieval's
embedder and reranker), whether the CPU computes bfloat16 natively, and how a model runs
through OpenVINO on the CPU (retrieval's int8 embedder, the verifier's model). This module imports
only the standard library: torch is imported in the child alone (and by `cpu_has_bfloat16`
when it is called), so it can be used where the runtime's other dependencies are absent (the
benchmarks' device runs put only `libs/runtime/src` on the path).
"""

from __future__ import annotations

import platform
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

CANDIDATES = ("cuda", "mps", "xpu")

# Prints one line per candidate as it goes, so a crash on one still tells which came before.
_PROBE = r"""
import sys
try:
    import torch
except Exception as exc:
    print("fail", "*", "torch not importable: %r" % (exc,), flush=True)
    raise SystemExit(0)
for name in sys.argv[1:]:
    kind = name.split(":")[0]
    try:
        backend = {"cuda": torch.cuda, "mps": getattr(torch.backends, "mps", None),
                   "xpu": getattr(torch, "xpu", None)}.get(kind)
        if kind != "cpu" and (backend is None or not backend.is_available()):
            print("fail", name, "not available", flush=True)
            continue
        value = (torch.zeros(1, device=name) + 1).item()
        print("ok" if value == 1.0 else "fail", name, "tensor probe gave %r" % (value,),
              flush=True)
        raise SystemExit(0)
    except SystemExit:
        raise
    except Exception as exc:
        print("fail", name, repr(exc).replace("\n", " ")[:300], flush=True)
"""


@dataclass
class DeviceChoice:
    """The device chosen, and why each better one was not."""

    device: str
    rejected: dict[str, str] = field(default_factory=dict)

    def fallback_reason(self, preference: str) -> str | None:
        """Why an explicitly requested device (not `auto`, not `cpu`) was replaced by cpu."""
        if preference in ("auto", "cpu") or self.device != "cpu":
            return None
        return "; ".join(f"{d}: {why}" for d, why in self.rejected.items()) or f"{preference}: not usable"


def probe(candidates: list[str], timeout_s: float = 60.0) -> tuple[str | None, dict[str, str]]:
    """The first candidate whose tensor probe succeeds, and the reasons for those that failed."""
    rejected: dict[str, str] = {}
    remaining = list(candidates)
    while remaining:
        try:
            done = subprocess.run(
                [sys.executable, "-c", _PROBE, *remaining], capture_output=True, text=True, timeout=timeout_s
            )
            lines, crashed = done.stdout.splitlines(), done.returncode != 0
            tail = "probe process crashed: " + (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
            lines, crashed, tail = out.splitlines(), True, f"probe hung for {timeout_s:g} s"
        for line in lines:
            verdict, name, reason = (line.split(" ", 2) + ["", ""])[:3]
            if name == "*":
                return None, {c: reason for c in candidates}
            if name not in remaining:
                continue
            remaining = remaining[remaining.index(name) + 1 :]
            if verdict == "ok":
                return name, rejected
            rejected[name] = reason
        if crashed and remaining:
            # The child died on the candidate after the last one it reported.
            rejected[remaining[0]] = tail
            remaining = remaining[1:]
        elif not crashed:
            break
    return None, rejected


def resolve_device(preference: str = "auto", timeout_s: float = 60.0) -> DeviceChoice:
    """`preference` ("auto" or a torch device such as "cuda:1") probed; cpu when none works."""
    candidates = list(CANDIDATES) if preference == "auto" else [preference]
    if candidates == ["cpu"]:
        return DeviceChoice("cpu")
    found, rejected = probe(candidates, timeout_s)
    return DeviceChoice(found or "cpu", rejected)


def cpu_has_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX), as oneDNN sees it:
    there half precision runs two to three times as fast as float32; elsewhere it is emulated
    and slower. The verifier and the embedder choose their `auto` precision by it."""
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def openvino_on_cpu(model, *, bfloat16: bool) -> OpenVINOOnCPU:
    """`model` (an OpenVINO model, or the path of its .xml) compiled for this CPU with as many
    threads as torch uses, what it computes in floating point in bfloat16 (where the caller's
    precision is bfloat16 or the CPU has it natively) or float32. openvino and torch are
    imported here, by the services that run a model through it."""
    import openvino
    import torch

    config = {
        "INFERENCE_NUM_THREADS": torch.get_num_threads(),
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "bf16" if bfloat16 else "f32",
    }
    return OpenVINOOnCPU(openvino.Core().compile_model(model, "CPU", config))


class OpenVINOOnCPU:
    """A compiled OpenVINO model with an inference request for each thread that calls it: one
    request runs one inference at a time, and a service may infer from several threads (a
    search embeds its query while ingest embeds a file)."""

    def __init__(self, compiled):
        self._compiled = compiled
        self._local = threading.local()

    def infer(self, inputs: dict):
        """The model's outputs for `inputs`, in this thread's request (whose buffers the next
        call on this thread reuses)."""
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        return request.infer(inputs)


def cpu_has_int8_dot(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has int8 dot-product instructions (AVX512-VNNI, AVX-VNNI or AMX): there
    the embedder's int8 model runs about 1.5x as fast as bfloat16; elsewhere int8 gains little."""
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & _cpuinfo(cpuinfo)[1])


def cpu_has_amx(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU has AMX's bfloat16 tiles: there bfloat16 embeds as fast as the int8 copy
    (docs/architecture.md), so the embedder's `auto` keeps bfloat16's exact vectors."""
    return "amx_bf16" in _cpuinfo(cpuinfo)[1]


def _cpuinfo(cpuinfo: Path) -> tuple[str, set[str]]:
    """The first CPU's model name and instruction-set flags in `cpuinfo`; empty where unreadable."""
    name, flags = "", set()
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not name:
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        pass
    return name, flags


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name and which native bfloat16 it has ("Intel(R) Xeon(R) Processor, AMX").
    Benchmarks name it: half-precision rates differ two to three times between a CPU with AMX,
    one with AVX512-BF16 only and one without either, on otherwise alike machines."""
    name, flags = _cpuinfo(cpuinfo)
    name = name or platform.processor() or platform.machine()
    native = "AMX" if "amx_bf16" in flags else "AVX512-BF16" if "avx512_bf16" in flags else ""
    return f"{name}, {native}" if native else name
