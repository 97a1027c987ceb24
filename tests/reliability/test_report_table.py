"""docs/reliability.md has a row for every test id of the plan (shared/RELIABILITY.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools.reliability_report import ROWS

PLAN = Path(__file__).resolve().parents[3] / "shared" / "RELIABILITY.md"


def test_every_plan_id_has_a_row_and_every_row_a_plan_id():
    if not PLAN.exists():
        pytest.skip(f"the plan is not at {PLAN}")
    planned = set(re.findall(r"^\| ([A-Z]+(?:-[A-Z]+)?-\d+)", PLAN.read_text(), re.MULTILINE))
    rows = {row.id for row in ROWS}
    assert planned and planned == rows, (planned - rows, rows - planned)
