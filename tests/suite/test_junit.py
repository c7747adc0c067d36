"""The few numbers JUnit carries per scenario."""

from __future__ import annotations

from pytest_diffperf.results.model import ScenarioResult
from pytest_diffperf.suite.junit import junit_numbers
from tests.support.reports import check, results


def test_a_checked_scenario_carries_its_e2e_change_and_outcome():
    result = ScenarioResult(scenario="a", verdict="fail", checks=[check("e2e", "e2e", 1100.0, 1000.0, 1050.0, "fail")],
                            measured={"e2e_ms": 1100.0, "load_ms": 5000.0, "avg_step_ms": 12.0})  # fmt: skip
    assert junit_numbers(result) == [
        ("diffperf_outcome", "fail"),
        ("diffperf_verdict", "fail"),
        ("diffperf_e2e_ms", "1100.0"),
        ("diffperf_expected_e2e_ms", "1000.0"),
        ("diffperf_e2e_change", "0.1"),
        ("diffperf_load_ms", "5000.0"),
    ]


def test_an_ab_scenario_carries_its_figures_too(tmp_path):
    ab = next(r for r in results(tmp_path / "x.png") if r.scenario == "ab")
    ab.measured = {"e2e_ms": 1120.0, "base_e2e_ms": 1000.0, "e2e_ratio": 1.12, "ab_requests": 32.0}
    assert junit_numbers(ab) == [
        ("diffperf_outcome", "fail"),
        ("diffperf_verdict", "fail"),
        ("diffperf_e2e_ms", "1120.0"),
        ("diffperf_e2e_change", "0.12"),
        ("diffperf_base_e2e_ms", "1000.0"),
        ("diffperf_e2e_ratio", "1.12"),
        ("diffperf_ab_requests", "32.0"),
    ]


def test_an_ab_change_is_the_verdicts_estimate_not_the_ratio_of_the_medians(tmp_path):
    """The trial's wan_tiny_i2v: pooled medians 3080 -> 4166 ms (+35.3 %), the paired estimate +3.4 %."""
    ab = next(r for r in results(tmp_path / "x.png") if r.scenario == "ab")
    assert ab.ab is not None
    ab.ab.metrics[0] = ab.ab.metrics[0].model_copy(update={"ratio": 1.034, "base_ms": 3080.41, "candidate_ms": 4166.32})
    ab.measured = {"e2e_ms": 4166.32, "base_e2e_ms": 3080.41, "e2e_ratio": 1.034}
    assert ("diffperf_e2e_change", "0.034") in junit_numbers(ab)
