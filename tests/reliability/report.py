"""Figures of the reliability suite: one JSON file per test id, plus pytest's record_property.

    report("R-JS-1", published=1000, lost=0)

writes `test-artifacts/reliability/R-JS-1.json` ({"id", "test", "figures", "at", "outcome"}),
prints the same object as one JSON line, and records it on the test (junit-xml property).
`tools/reliability_report.py` turns the files into the table in docs/reliability.md. The
`outcome` is filled in by the conftest hook once the test has passed or failed, so a figure
written just before a failing assertion is never mistaken for a passing one.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("ZOCRATES_RELIABILITY_DIR", ROOT / "test-artifacts" / "reliability"))


def report_path(test_id: str) -> Path:
    return ARTIFACTS / f"{test_id}.json"


def write_report(test_id: str, nodeid: str, figures: dict) -> dict:
    payload = {
        "id": test_id,
        "test": nodeid,
        "figures": figures,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "outcome": "running",
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    report_path(test_id).write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    print(json.dumps(payload), flush=True)
    return payload


def set_outcome(test_id: str, outcome: str) -> None:
    path = report_path(test_id)
    try:
        payload = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return
    payload["outcome"] = outcome
    path.write_text(json.dumps(payload, indent=1) + "\n")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]
