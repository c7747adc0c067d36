"""Judging a scenario: the checks SGLang makes with run_perf_check false, and memory only where the platform reports it."""

from __future__ import annotations

from pytest_diffperf.perf.limits import JudgeRules
from pytest_diffperf.results.verdict import E2E_AND_LOAD, judge_limits

from ..perf.test_limits import SGLANG, at_baseline, fixture_set, tol  # noqa: F401 (fixtures)


def judge(fixture_set, tol, measurement, **kw):  # noqa: F811
    scenario = fixture_set.scenarios["img_t2i"]
    return judge_limits(
        "img_t2i", scenario, measurement, JudgeRules(tol, SGLANG, tuple(fixture_set.step_fractions), **kw)
    )


def test_e2e_and_load_alone_are_judged_when_the_perf_check_is_off(fixture_set, tol):  # noqa: F811
    scenario = fixture_set.scenarios["img_t2i"]
    slow_stages = at_baseline(scenario, 10.0, e2e_ms=[scenario.expected_e2e_ms], load_ms=[scenario.expected_load_ms])
    assert judge(fixture_set, tol, slow_stages).verdict == "fail"  # every check: the stages and steps fail
    result = judge(fixture_set, tol, slow_stages, kinds=E2E_AND_LOAD)
    assert result.verdict == "pass"
    assert [c.name for c in result.checks] == ["e2e", "load"]
    slow_load = at_baseline(scenario, load_ms=[10 * scenario.expected_load_ms])
    result = judge(fixture_set, tol, slow_load, kinds=E2E_AND_LOAD)
    assert result.verdict == "fail"
    assert [(c.name, c.verdict) for c in result.checks] == [("e2e", "pass"), ("load", "fail")]
    assert "load" in result.message and "stage[" not in result.message


def test_memory_is_judged_only_where_the_platform_reports_it(fixture_set, tol):  # noqa: F811
    no_device_figures = at_baseline(fixture_set.scenarios["img_t2i"], memory={})
    result = judge(fixture_set, tol, no_device_figures)
    assert result.verdict == "fail"
    assert {c.kind for c in result.checks if c.verdict == "missing"} == {"vram"}
    result = judge(fixture_set, tol, no_device_figures, vram=False, host_anon=False)
    assert result.verdict == "pass"
    assert {c.kind for c in result.checks} & {"vram", "host_anon"} == set()
