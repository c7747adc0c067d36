"""A scenario far faster than its baseline: "stale baseline?" in its summary row, with the command that records it."""

from __future__ import annotations

import pytest

from pytest_diffperf.results.model import CheckRecord, ScenarioResult
from pytest_diffperf.results.stale import stale_note
from pytest_diffperf.results.tables import reason


def passed(actual: float | None, expected: float = 2900.0) -> ScenarioResult:
    check = CheckRecord(name="e2e", kind="e2e", actual=actual, expected=expected, limit=expected * 1.1, rel=0.1,
                        pad=0.0, verdict="pass")  # fmt: skip
    return ScenarioResult(scenario="flux_tiny_t2i", verdict="pass", checks=[check])


def test_half_the_baseline_or_less_is_a_stale_baseline_with_the_command():
    result = passed(1197.3)
    expected = (
        "stale baseline? e2e -58.7% (1197 ms against 2900 ms stored); record this machine when it is quiet: "
        "pytest --regen-baselines -k flux_tiny_t2i (with this run's options)"
    )
    assert stale_note(result) == expected
    assert reason(result) == expected  # the summary table's row of a pass


@pytest.mark.parametrize("actual", [1450.1, 2900.0, 3100.0, None])
def test_within_half_of_the_baseline_or_slower_says_nothing(actual):
    assert stale_note(passed(actual)) is None
    assert stale_note(passed(100.0, expected=0.0)) is None  # an unguarded baseline: said elsewhere
    assert stale_note(ScenarioResult(scenario="x", verdict="pass")) is None
