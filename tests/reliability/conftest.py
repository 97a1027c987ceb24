"""Fixtures of the reliability suite: `report` publishes a test's figures."""

from __future__ import annotations

import pytest

from reliability.report import set_outcome, write_report


@pytest.fixture
def report(request, record_property):
    """`report(test_id, **figures)`: publish the test's figures (see reliability/report.py)."""
    ids: list[str] = request.node.stash.setdefault(_REPORTED, [])

    def publish(test_id: str, **figures) -> dict:
        ids.append(test_id)
        record_property(test_id, figures)
        return write_report(test_id, request.node.nodeid, figures)

    return publish


_REPORTED = pytest.StashKey[list]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    result = yield
    if result.when == "call" or (result.when == "setup" and result.failed):
        for test_id in item.stash.get(_REPORTED, []):
            set_outcome(test_id, "xfailed" if hasattr(result, "wasxfail") else result.outcome)
    return result
