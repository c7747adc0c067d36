"""A real run far faster than its stored baseline passes, and its summary row asks "stale baseline?"."""

from __future__ import annotations

import pytest

from tests.support.suite import GENEROUS, tiny_case

pytestmark = pytest.mark.server  # starts a server process


def test_a_run_far_faster_than_its_baseline_says_stale_baseline_with_the_command(pytester, suite):
    result = pytester.runpytest(*suite([tiny_case("tiny")], {"tiny": GENEROUS}))  # a 600 s baseline
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "stale baseline? e2e -" in out and "ms against 600000 ms stored); record this machine when it" in out
    below = out[out.index("passed far faster than the baseline:") :]
    assert "pytest --regen-baselines -k tiny (with this run's options)" in " ".join(below.split())
