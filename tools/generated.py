"""Writing a generated file, as the tools behind `make docs` and `make schemas` do (each has a
test that fails when its file and its sources drift apart)."""

from __future__ import annotations

from pathlib import Path


def write(out: Path, text: str) -> int:
    """Write `text` to `out`, say so, and return the exit status for `sys.exit`."""
    out.write_text(text)
    print(f"wrote {out}")
    return 0
