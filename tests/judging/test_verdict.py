"""Judging a scenario: the checks SGLang makes with run_perf_check false, memory only where the platform reports it,
repeated requests and required baselines as the case's SGLang release judges them."""

from __future__ import annotations

import dataclasses

from pytest_diffperf.judging.verdict import E2E_AND_LOAD, judge_limits, judge_requests
from pytest_diffperf.perf.limits import JudgeRules, plan_checks
from pytest_diffperf.perf.measurement import Measurement

from ..perf.test_limits import SGLANG, at_baseline, fixture_set, tol  # noqa: F401 (fixtures)


def judge(fixture_set, tol, measurement, scenario=None, **kw):  # noqa: F811
    scenario = scenario or fixture_set.scenarios["img_t2i"]
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


def test_repeated_requests_are_judged_as_the_case_s_sglang_release_judges_them(fixture_set, tol):  # noqa: F811
    """Two requests, 1200 and 900 ms, against an e2e limit of 1050 ms: the median (1050) passes; SGLang 0.5.20+
    judges each request (the first fails); 0.5.19 the last one alone (it passes)."""
    scenario = fixture_set.scenarios["img_t2i"]
    rules = JudgeRules(tol, SGLANG, tuple(fixture_set.step_fractions), kinds=E2E_AND_LOAD)
    e2e_limit = next(c for c in plan_checks(scenario, rules, is_video=False, num_frames=None) if c.name == "e2e").limit
    one = at_baseline(scenario)
    both = Measurement(
        e2e_ms=[e2e_limit + 150, e2e_limit - 150],
        steps=[one.steps[0]] * 2,
        stages=[one.stages[0]] * 2,
        load_ms=one.load_ms,
        memory={k: [*v, *v] for k, v in one.memory.items()},
    )
    assert judge_requests("img_t2i", scenario, both, rules, "all").verdict == "pass"
    each = judge_requests("img_t2i", scenario, both, rules, "each")
    assert each.verdict == "fail"
    assert each.message.startswith("request 1/2 (each is judged on its own): ")
    assert judge_requests("img_t2i", scenario, both, rules, "last").verdict == "pass"
    swapped = dataclasses.replace(both, e2e_ms=list(reversed(both.e2e_ms)))
    assert judge_requests("img_t2i", scenario, swapped, rules, "last").verdict == "fail"
    assert judge_requests("img_t2i", scenario, swapped, rules, "each").message.startswith("request 2/2 ")


def test_a_baseline_the_case_s_release_requires_fails_when_absent(fixture_set, tol):  # noqa: F811
    """SGLang 0.5.21+ fails a scenario without expected_load_ms, 0.5.19+ one without load/runtime_peak_vram_mb."""
    scenario = fixture_set.scenarios["img_t2i"]
    bare = scenario.model_copy(update={"expected_load_ms": None, "load_peak_vram_mb": None})
    measured = at_baseline(scenario)
    assert judge(fixture_set, tol, measured, scenario=bare).verdict == "pass"
    required = frozenset({"expected_load_ms", "load_peak_vram_mb", "runtime_peak_vram_mb"})
    result = judge(fixture_set, tol, measured, scenario=bare, required=required)
    assert result.verdict == "fail"
    assert {(c.name, c.verdict) for c in result.checks if c.verdict != "pass"} == {
        ("load", "missing"),
        ("load_peak_vram_mb", "missing"),
    }
    assert "load: baseline expected_load_ms missing or invalid (the case's SGLang release fails it)" in result.message
    assert judge(fixture_set, tol, measured, scenario=bare, required=required, vram=False).verdict == "fail"  # load
    zero = scenario.model_copy(update={"expected_load_ms": 0.0, "expected_e2e_ms": 0.0})
    assert judge(fixture_set, tol, measured, scenario=zero).verdict == "unguarded"
    failed = judge(fixture_set, tol, measured, scenario=zero, required=required | {"expected_e2e_ms"})
    assert {c.name for c in failed.checks if c.verdict == "missing"} == {"e2e", "load"}
