"""Device resolution by a tensor probe in a child process, surviving a crashing driver."""

from __future__ import annotations

from zocrates_runtime import device


def test_auto_on_a_cpu_machine_resolves_to_cpu_with_reasons():
    choice = device.resolve_device("auto")
    import torch

    if not torch.cuda.is_available():
        assert choice.device == "cpu"
        assert set(choice.rejected) == {"cuda", "mps", "xpu"}
        assert all(choice.rejected.values())


def test_a_crashing_candidate_costs_only_itself(monkeypatch):
    fake_probe = """
import os, sys
for name in sys.argv[1:]:
    if name == "cuda":
        os._exit(139)  # a driver that segfaults the process
    print(("ok " if name == "cpu" else "fail ") + name + " unavailable", flush=True)
    if name == "cpu":
        break
"""
    monkeypatch.setattr(device, "_PROBE", fake_probe)
    found, rejected = device.probe(["cuda", "mps", "cpu"])
    assert found == "cpu"
    assert "crashed" in rejected["cuda"] and rejected["mps"] == "unavailable"


def test_a_hanging_probe_times_out(monkeypatch):
    monkeypatch.setattr(device, "_PROBE", "import time; time.sleep(30)")
    found, rejected = device.probe(["cuda"], timeout_s=0.5)
    assert found is None and "hung" in rejected["cuda"]


def test_explicit_cpu_needs_no_probe(monkeypatch):
    monkeypatch.setattr(device, "probe", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    assert device.resolve_device("cpu").device == "cpu"


def test_the_cpu_description_names_the_model_and_its_native_bfloat16(tmp_path):
    from zocrates_runtime.device import cpu_description

    def described(flags: str) -> str:
        info = tmp_path / "cpuinfo"
        info.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 {flags}\n\nprocessor\t: 1\n")
        return cpu_description(info)

    assert described("avx512f avx512_bf16 amx_bf16 amx_tile") == "Some CPU, AMX"
    assert described("avx512f avx512_bf16") == "Some CPU, AVX512-BF16"
    assert described("avx2") == "Some CPU"
    assert cpu_description(tmp_path / "absent")  # elsewhere: what the platform says


def test_int8_dot_products_are_read_from_the_same_flags(tmp_path):
    """The embedder's `auto` picks int8 by them (VNNI in either width, or AMX's int8)."""
    from zocrates_runtime.device import cpu_has_int8_dot

    info = tmp_path / "cpuinfo"
    for flags, has in (
        ("avx512f avx512_vnni", True),
        ("avx2 avx_vnni", True),
        ("amx_int8", True),
        ("avx512_bf16", False),
    ):
        info.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 {flags}\n")
        assert cpu_has_int8_dot(info) is has, flags
    assert cpu_has_int8_dot(tmp_path / "absent") is False


def test_amx_is_read_from_the_same_flags(tmp_path):
    """The embedder's `auto` keeps bfloat16 where AMX computes it (its int8 gains nothing there)."""
    from zocrates_runtime.device import cpu_has_amx

    info = tmp_path / "cpuinfo"
    for flags, has in (("amx_bf16 amx_int8 amx_tile", True), ("avx512_bf16 avx512_vnni", False)):
        info.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 {flags}\n")
        assert cpu_has_amx(info) is has, flags
    assert cpu_has_amx(tmp_path / "absent") is False
