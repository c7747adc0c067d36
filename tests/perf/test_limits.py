"""The limit engine: plans, verdicts, SGLang's special cases, samples and records."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_diffperf.perf.baselines import load_baselines
from pytest_diffperf.perf.limits import (
    JudgeRules,
    Preset,
    evaluate,
    get_preset,
    judge_check,
    limit,
    plan_checks,
    step_indices,
)
from pytest_diffperf.perf.measurement import Measurement
from pytest_diffperf.perf.schema import ScenarioBaseline
from pytest_diffperf.protocol import PerfRecord
from pytest_diffperf.results.tables import format_failures
from tests.support.paths import LAYOUT

SGLANG = get_preset("sglang")
MEMORY_KEYS = (
    "load_peak_vram_mb",
    "runtime_peak_vram_mb",
    "load_peak_allocated_mb",
    "runtime_peak_allocated_mb",
    "warmup_peak_vram_mb",
    "load_peak_host_anon_mb",
    "runtime_peak_host_anon_mb",
)


@pytest.fixture(scope="module")
def fixture_set():
    return load_baselines(LAYOUT / "perf_baselines", "h100", runner_name="")


@pytest.fixture(scope="module")
def tol(fixture_set):
    return fixture_set.profile("pr_test", env={})


def at_baseline(scenario: ScenarioBaseline, factor: float = 1.0, **changes) -> Measurement:
    """One sample with every metric at ``factor`` x its baseline (steps filled to a full map)."""
    steps = scenario.steps
    n = max(steps) + 1 if steps else 0
    run = [factor * steps.get(i, scenario.expected_avg_denoise_ms) for i in range(n)]
    stages = {name: factor * ms for name, ms in scenario.stages_ms.items() if ms is not None}
    memory = {k: [factor * getattr(scenario, k)] for k in MEMORY_KEYS if getattr(scenario, k) is not None}
    load = () if scenario.expected_load_ms is None else (factor * scenario.expected_load_ms,)
    fields = dict(e2e_ms=[factor * scenario.expected_e2e_ms], steps=[run], stages=[stages], load_ms=load, memory=memory)
    return Measurement(**{**fields, **changes})


def run(fixture_set, tol, name, measurement, **kw):
    scenario = kw.pop("scenario", None) or fixture_set.scenarios[name]
    return evaluate(scenario, measurement, JudgeRules(tol, SGLANG, tuple(fixture_set.step_fractions)))


def verdicts(results) -> dict[str, str]:
    return {r.check.name: r.verdict for r in results}


def test_at_baseline_everything_passes(fixture_set, tol):
    results = run(fixture_set, tol, "img_t2i", at_baseline(fixture_set.scenarios["img_t2i"]))
    assert set(verdicts(results).values()) == {"pass"}
    assert all(r.passed for r in results)
    assert format_failures(results) == ""


@given(factor=st.floats(min_value=0.001, max_value=1.0), name=st.sampled_from(["img_t2i", "vid_t2v", "io_bound"]))
def test_faster_never_fails(fixture_set, tol, factor, name):
    scenario = fixture_set.scenarios[name]
    results = run(fixture_set, tol, name, at_baseline(scenario, factor))
    assert all(r.verdict == "pass" for r in results), format_failures(results)


@given(
    expected=st.floats(min_value=0, max_value=1e6),
    rel=st.floats(min_value=0, max_value=10),
    pad=st.floats(min_value=0, max_value=1e3),
    actual=st.floats(min_value=0, max_value=2e7),
)
def test_verdict_is_the_formula(expected, rel, pad, actual):
    from pytest_diffperf.perf.limits import Check

    check = Check("stage[X]", "stage", expected, rel, pad, limit(expected, rel, pad), "stages_ms.X")
    result = judge_check(check, actual)
    assert result.verdict == ("fail" if actual > max(expected * (1 + rel), expected + pad) else "pass")


def test_injected_slowdowns_fail_exactly_those_checks(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]
    base = at_baseline(scenario)
    rules = JudgeRules(tol, SGLANG, tuple(fixture_set.step_fractions))
    plan = {c.name: c for c in plan_checks(scenario, rules, is_video=False, num_frames=None)}
    over = {name: plan[name].limit + 0.01 for name in ("e2e", "step[4]", "stage[TextEncodingStage]")}
    steps = list(base.steps[0])
    steps[4] = over["step[4]"]
    steps[3] = 110.0  # not a sampled index: only the aggregates see it, and they stay in limit
    stages = {**base.stages[0], "TextEncodingStage": over["stage[TextEncodingStage]"]}
    memory = {**base.memory, "runtime_peak_allocated_mb": [plan["runtime_peak_allocated_mb"].limit + 1]}
    slow = dataclasses.replace(base, e2e_ms=[over["e2e"]], steps=[steps], stages=[stages], memory=memory)
    results = run(fixture_set, tol, "img_t2i", slow)
    failed = {name for name, v in verdicts(results).items() if v != "pass"}
    assert failed == {"e2e", "step[4]", "stage[TextEncodingStage]", "runtime_peak_allocated_mb"}
    table = format_failures(results)
    header = ["check", "actual", "expected", "Δ", "limit", "allowed", "over", "limit", "rel", "pad", "unit"]
    assert table.splitlines()[0].split() == header
    assert "stage[TextEncodingStage]" in table and "140.01" in table
    assert len(table.splitlines()) == 5


def test_exactly_at_limit_passes(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]
    limit_e2e = limit(1100.0, 0.25, 20)
    assert verdicts(run(fixture_set, tol, "img_t2i", at_baseline(scenario, e2e_ms=[limit_e2e])))["e2e"] == "pass"


def test_missing_stage(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]
    base = at_baseline(scenario)
    stages = {k: v for k, v in base.stages[0].items() if k != "DecodingStage"}
    results = run(fixture_set, tol, "img_t2i", dataclasses.replace(base, stages=[stages]))
    (bad,) = [r for r in results if not r.passed]
    assert (bad.check.name, bad.verdict, bad.actual) == ("stage[DecodingStage]", "missing", None)
    assert bad.message == "Stage DecodingStage timing missing"
    assert "missing" in format_failures(results)


def test_null_stage_is_not_checked(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"].model_copy(
        update={"stages_ms": {**fixture_set.scenarios["img_t2i"].stages_ms, "UpscalingStage": None}}
    )
    results = run(fixture_set, tol, "img_t2i", at_baseline(scenario), scenario=scenario)
    assert "stage[UpscalingStage]" not in verdicts(results)
    assert all(r.passed for r in results)


def test_zero_baseline_is_unguarded_never_silently_passed(fixture_set, tol):
    measurement = Measurement(e2e_ms=[1e9], steps=[[]], stages=[{}])
    results = run(fixture_set, tol, "e2e_only", measurement)
    assert verdicts(results) == {
        "e2e": "unguarded",
        "avg_denoise": "unguarded",
        "median_denoise": "unguarded",
    }
    assert all(r.passed for r in results)
    assert "not guarded" in results[0].message


def test_missing_measurements(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]
    empty = Measurement(e2e_ms=[], steps=[], stages=[])
    v = verdicts(run(fixture_set, tol, "img_t2i", empty))
    # No allocated figure measured: the reserved one is checked, and it is missing too.
    assert v["e2e"] == v["load"] == v["avg_denoise"] == v["load_peak_vram_mb"] == "missing"
    assert not any(name.startswith("step[") for name in v)  # steps follow the measured count
    invalid = at_baseline(scenario, e2e_ms=[math.nan])
    assert verdicts(run(fixture_set, tol, "img_t2i", invalid))["e2e"] == "missing"
    zero = at_baseline(scenario, e2e_ms=[0.0])
    assert verdicts(run(fixture_set, tol, "img_t2i", zero))["e2e"] == "missing"


def rels(fixture_set, tol, name, **kw) -> dict[str, float]:
    checks = plan_checks(fixture_set.scenarios[name], JudgeRules(tol, SGLANG, tuple(fixture_set.step_fractions)), **kw)
    return {c.name: c.rel for c in checks}


def test_timing_tolerance_raises_wall_clock_rels_only(fixture_set, tol):
    plain = rels(fixture_set, tol, "img_t2i", is_video=False, num_frames=None)
    wide = rels(fixture_set, tol, "io_bound", is_video=False, num_frames=None)  # timing_tolerance 0.9
    assert plain["e2e"] == 0.25 and wide["e2e"] == 0.9
    assert plain["load"] == 0.4 and wide["load"] == 0.9
    assert wide["avg_denoise"] == wide["step[2]"] == wide["stage[DenoisingStage]"] == 0.9
    assert wide["stage[TextEncodingStage]"] == 0.9 and wide["stage[DecodingStage]"] == 0.9
    assert wide["step[0]"] == 4.0  # max(4.0, 0.9)
    assert wide["load_peak_allocated_mb"] == 0.01 and wide["runtime_peak_allocated_mb"] == 0.02


def test_env_overrides_reach_the_limits(fixture_set):
    tol = fixture_set.profile("pr_test", env={"SGLANG_E2E_TOLERANCE": "1.0", "SGLANG_DENOISE_STEP_TOLERANCE": "2"})
    r = rels(fixture_set, tol, "img_t2i", is_video=False, num_frames=None)
    assert r["e2e"] == 1.0 and r["step[2]"] == 2.0 and r["load"] == 0.4


@pytest.mark.parametrize(("runner", "e2e_limit"), [("b200-pool-a-1", 2500.0), ("b200-pool-z", 3750.0), ("x", 1375.0)])
def test_runner_overrides_reach_the_limits(layout, runner, e2e_limit):
    baselines = load_baselines(layout / "perf_baselines", "b200", runner_name=runner)
    checks = plan_checks(
        baselines.scenarios["img_t2i"],
        JudgeRules(baselines.profile("pr_test", env={}), SGLANG, tuple(baselines.step_fractions)),
        is_video=False,
        num_frames=None,
    )
    assert checks[0].name == "e2e" and checks[0].limit == pytest.approx(e2e_limit)


def test_video_pads_and_per_frame(fixture_set, tol):
    checks = plan_checks(
        fixture_set.scenarios["vid_t2v"],
        JudgeRules(tol, SGLANG, (0, 0.5, 1)),
        is_video=True,
        num_frames=100,
    )
    by_name = {c.name: c for c in checks}
    assert (by_name["step[0]"].rel, by_name["step[0]"].pad) == (4.0, 80.0)
    assert (by_name["step[2]"].rel, by_name["step[2]"].pad) == (0.3, 160.0)
    assert by_name["per_frame"].limit == pytest.approx(limit(50.0, 0.25, 20))
    assert "stage[per_frame_generation]" not in by_name
    assert "step[4]" in by_name  # partial maps: the sampled indices that the baseline has
    no_frames = plan_checks(
        fixture_set.scenarios["vid_t2v"],
        JudgeRules(tol, SGLANG, (0, 0.5, 1)),
        is_video=True,
        num_frames=None,
    )
    assert "per_frame" not in {c.name for c in no_frames}
    as_image = rels(fixture_set, tol, "vid_t2v", is_video=False, num_frames=100)
    assert as_image["stage[per_frame_generation]"] == 0.8 and "per_frame" not in as_image


def test_per_frame_actual_is_e2e_over_frames(fixture_set, tol):
    scenario = fixture_set.scenarios["vid_t2v"]
    slow = at_baseline(scenario, e2e_ms=[7200.0], num_frames=100, is_video=True)  # 72 ms/frame > 50 + 20
    results = {r.check.name: r for r in run(fixture_set, tol, "vid_t2v", slow)}
    assert results["per_frame"].actual == 72.0 and results["per_frame"].verdict == "fail"
    assert results["e2e"].verdict == "pass"


def test_step_sampling_uses_the_measured_step_count(fixture_set, tol):
    assert step_indices(50, [0, 0.2, 0.4, 0.6, 0.8, 1.0]) == [0, 10, 20, 29, 39, 49]
    assert step_indices(10, [0, 0.2, 0.4, 0.6, 0.8, 1.0]) == [0, 2, 4, 5, 7, 9]
    assert step_indices(1, [0, 0.5, 1]) == [0]
    assert step_indices(0, [0, 1]) == []
    scenario = fixture_set.scenarios["img_t2i"]
    twenty = at_baseline(scenario, steps=[[100.0] * 20])  # 20 measured: 0 4 8 11 15 19; baseline has 0..9
    names = [r.check.name for r in run(fixture_set, tol, "img_t2i", twenty) if r.check.kind == "step"]
    assert names == ["step[0]", "step[4]", "step[8]"]


def test_denoising_role_from_the_measurement(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]
    rules = JudgeRules(tol, SGLANG, (0,))
    default = {c.name: c.rel for c in plan_checks(scenario, rules, is_video=False, num_frames=None)}
    flagged = {
        c.name: c.rel
        for c in plan_checks(scenario, rules, denoising_stages={"TextEncodingStage"}, is_video=False, num_frames=None)
    }
    assert default["stage[DenoisingStage]"] == 0.25 and default["stage[TextEncodingStage]"] == 0.8
    assert flagged["stage[DenoisingStage]"] == 0.8 and flagged["stage[TextEncodingStage]"] == 0.25


def test_memory_check_selection(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]

    def names(memory):
        checks = plan_checks(scenario, JudgeRules(tol, SGLANG), is_video=False, num_frames=None, memory=memory)
        return [c.name for c in checks if c.unit == "MiB"]

    assert names(None) == ["load_peak_allocated_mb", "runtime_peak_allocated_mb"]
    # Allocated figure not measured (0): the reserved one is checked, as in SGLang.
    assert names({"load_peak_allocated_mb": 0.0, "runtime_peak_allocated_mb": 5.0}) == [
        "load_peak_vram_mb",
        "runtime_peak_allocated_mb",
    ]
    with_extra = scenario.model_copy(
        update={
            "warmup_peak_vram_mb": 10.0,
            "load_peak_host_anon_mb": 100.0,
            "runtime_peak_host_anon_mb": 200.0,
        }
    )
    plan = plan_checks(with_extra, JudgeRules(tol, SGLANG), is_video=False, num_frames=None)
    by_name = {c.name: c for c in plan}
    assert by_name["warmup_peak_vram_mb"].rel == 0.02 and by_name["warmup_peak_vram_mb"].pad == 128
    assert by_name["runtime_peak_host_anon_mb"].rel == 0.02 and by_name["runtime_peak_host_anon_mb"].pad == 256
    measured = {"load_peak_allocated_mb": 1.0, "runtime_peak_allocated_mb": 1.0}  # no warmup, no host figures
    plan = plan_checks(with_extra, JudgeRules(tol, SGLANG), is_video=False, num_frames=None, memory=measured)
    assert {c.name for c in plan if c.unit == "MiB"} == set(measured)


def test_several_samples_use_the_preset_statistic(fixture_set, tol):
    scenario = fixture_set.scenarios["img_t2i"]
    base = at_baseline(scenario)
    three = dataclasses.replace(base, e2e_ms=[1000.0, 5000.0, 1100.0], steps=[base.steps[0]] * 3)
    median = {r.check.name: r for r in run(fixture_set, tol, "img_t2i", three)}
    assert median["e2e"].actual == 1100.0 and median["e2e"].verdict == "pass"
    worst = Preset("worst", statistic="max")
    results = evaluate(scenario, three, JudgeRules(tol, worst, tuple(fixture_set.step_fractions)))
    assert {r.check.name: r.actual for r in results}["e2e"] == 5000.0


def test_unknown_statistic_is_a_clear_error():
    from pytest_diffperf.errors import DiffperfError

    with pytest.raises(DiffperfError, match="unknown statistic 'p99'"):
        Preset("x", statistic="p99")


def test_preset_constants_are_configurable(fixture_set, tol):
    strict = dataclasses.replace(SGLANG, name="strict", pad_ms=0.0, stage_pad_ms=1.0, decoding_pad_ms=1.0)
    checks = plan_checks(fixture_set.scenarios["img_t2i"], JudgeRules(tol, strict), is_video=False, num_frames=None)
    by_name = {c.name: c for c in checks}
    assert by_name["e2e"].pad == 0.0 and by_name["stage[TextEncodingStage]"].limit == pytest.approx(36.0)


def record(**kw) -> PerfRecord:
    data = {
        "request_id": "r",
        "total_duration_ms": 1000.0,
        "steps": [10.0, 20.0, 30.0],
        "stages": [
            {"name": "TextEncodingStage", "execution_time_ms": 5.0},
            {"name": "DenoisingStage", "execution_time_ms": 60.0},
            {"name": "CausalDenoisingStage", "execution_time_ms": 7.0, "is_denoising": True},
            {"name": "DecodingStage", "execution_time_ms": 1.0},
            {"name": "DecodingStage", "execution_time_ms": 2.0},
        ],
        "memory_snapshots": {
            "load_peak": {"peak_allocated_mb": 100.0, "peak_reserved_mb": 110.0, "peak_host_anon_mb": 50.0},
            "runtime_peak": {"peak_allocated_mb": 200.0, "peak_reserved_mb": 220.0},
        },
    }
    return PerfRecord.model_validate({**data, **kw})


def test_from_records():
    m = Measurement.from_records([record(), record(total_duration_ms=3000.0)], load_ms=500.0, num_frames=8)
    assert m.e2e_ms == [1000.0, 3000.0] and m.load_ms == (500.0,) and m.num_frames == 8
    assert m.steps == [[10.0, 20.0, 30.0]] * 2
    assert m.stages[0] == {"TextEncodingStage": 5.0, "DenoisingStage": 60.0, "CausalDenoisingStage": 7.0,
                           "DecodingStage": 2.0}  # fmt: skip
    assert m.denoising_stages == {"DenoisingStage", "CausalDenoisingStage"}
    assert m.memory["load_peak_allocated_mb"] == [100.0, 100.0]
    assert m.memory["load_peak_vram_mb"] == [110.0, 110.0]
    assert m.memory["load_peak_host_anon_mb"] == [50.0, 50.0]
    assert m.memory["runtime_peak_host_anon_mb"] == [0.0, 0.0]
    assert "warmup_peak_vram_mb" not in m.memory


def test_from_records_explicit_flag_overrides_the_name():
    stages = [{"name": "DenoisingStage", "execution_time_ms": 1.0, "is_denoising": False}]
    assert Measurement.from_records([record(stages=stages)]).denoising_stages == frozenset()
