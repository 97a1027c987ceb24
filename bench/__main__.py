"""Run every benchmark module and write docs/benchmarks.md.

Each `bench/bench_<area>.py` defines `run() -> str`, returning a markdown section (a `##`
heading, what was measured, a table of medians/percentiles, the target and whether it was
met). Modules run in name order; `python -m bench <area> ...` runs a subset and merges the
sections into the existing file, so one area can be re-measured without the others.
Options after the areas (`--name value`) are passed to the `run()` of each area named, which
must take them (`python -m bench answers --split design`); a `run()` that returns None has
printed its own report and leaves its section of the file as it was.
"""

from __future__ import annotations

import importlib
import inspect
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "benchmarks.md"


def machine() -> str:
    from zocrates_runtime.device import cpu_description

    cpu = cpu_description()
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, Python {platform.python_version()}, {platform.system()}"


def parse_args(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Area names, and the `--name value` (or `--name=value`) options."""
    areas: list[str] = []
    options: dict[str, str] = {}
    args = iter(argv)
    for arg in args:
        if not arg.startswith("--"):
            areas.append(arg)
            continue
        name, _, value = arg[2:].partition("=")
        if not value and (value := next(args, None)) is None:
            raise SystemExit(f"bench: {arg} needs a value")
        options[name.replace("-", "_")] = value
    return areas, options


def main(argv: list[str]) -> int:
    areas, options = parse_args(argv)
    names = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    wanted = [n for n in names if not areas or n.removeprefix("bench_") in areas]
    for name in wanted if options else ():
        params = inspect.signature(importlib.import_module(f"bench.{name}").run).parameters
        if unknown := sorted(set(options) - set(params)):
            raise SystemExit(
                f"bench: {name.removeprefix('bench_')} takes no option {', '.join('--' + o for o in unknown)}"
            )
    from zocrates_runtime.device import cpu_description

    sections: dict[str, str] = {}
    written = False
    if OUT.exists():  # keep sections of areas not re-run
        parts = re.split(r"(?m)^<!-- bench:(\w+) -->$\n?", OUT.read_text())
        for key, body in zip(parts[1::2], parts[2::2]):
            sections[key] = body.strip() + "\n"
    for name in wanted:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        section = importlib.import_module(f"bench.{name}").run(**options)
        took = time.perf_counter() - started
        if section is None:
            continue
        written = True
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        # the machine differs from one run to the next: each section names the CPU it ran on
        sections[name] = f"{section.strip()}\n\n_Measured {stamp} on {cpu_description()} in {took:.1f} s._\n"
        print(section, flush=True)
    if not written:
        return 0
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    header = (
        "# Benchmarks\n\n"
        "Produced by `make bench` (or `.venv/bin/python -m bench <area>` for one area).\n"
        f"Last written at commit `{commit or 'uncommitted'}` on {machine()}. Sections are kept until their\n"
        "area is run again, on whichever machine runs it: each names the date of its run, and those run\n"
        "since 2026-12-06 09:24 UTC its CPU. The machines are shared and noisy: figures are medians and percentiles\n"
        "of one run.\n\n"
    )
    body = "\n".join(f"<!-- bench:{k} -->\n{v}" for k, v in sorted(sections.items()))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(header + body)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
