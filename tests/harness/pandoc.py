"""Rendering an exported answer through a real citeproc: pandoc from Debian, when installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

PANDOC = shutil.which("pandoc")

#: Skips a test when this machine has no pandoc (`.ci/run` installs it).
needs_pandoc = pytest.mark.skipif(PANDOC is None, reason="pandoc is not installed (Debian: apt-get install pandoc)")


def render_with_citeproc(folder: Path, markdown: str, bibliography: dict[str, str]) -> str:
    """`markdown` rendered as plain text by `pandoc --citeproc` against the first of the
    `bibliography` files (name -> text, all written into `folder`); fails the test when pandoc
    reports a citation it could not find."""
    (folder / "answer.md").write_text(markdown)
    for name, text in bibliography.items():
        (folder / name).write_text(text)
    done = subprocess.run(
        [PANDOC, "--citeproc", "--bibliography", next(iter(bibliography)), "-t", "plain", "--wrap=none", "answer.md"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "not found" not in done.stderr, done.stderr
    return done.stdout
