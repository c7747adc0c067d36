"""Memory is judged only where the platform's server reports it (SGLang judges VRAM and host memory only on CUDA)."""

from __future__ import annotations

import pytest

from pytest_diffperf import platforms
from pytest_diffperf.perf.limits import JudgeRules, assess, evaluate, plan_checks

from .test_limits import SGLANG, at_baseline, fixture_set, tol  # noqa: F401 (fixtures)


@pytest.mark.parametrize(
    ("platform", "vram", "host_anon"),
    [
        ("h100", True, True),
        ("b200", True, True),
        ("5090", True, True),
        ("rocm", False, False),
        ("npu", False, False),
        ("musa", False, False),
        ("xpu_b60", False, False),
        ("cpu", False, True),  # the reference server reports host memory only
    ],
)
def test_which_platforms_judge_memory(platform, vram, host_anon):
    assert (platforms.checks_vram(platform), platforms.checks_host_anon(platform)) == (vram, host_anon)


def test_amd_is_judged_with_the_default_gpu_files():
    assert platforms.canonical_platform("HIP") == platforms.canonical_platform("amd") == "rocm"
    assert platforms.baseline_file_stem("rocm") == "h100"
    assert platforms.threshold_file_stems("rocm") == ("h100",)
    assert platforms.device_kind("rocm") == "hip"


def test_no_memory_checks_are_planned_or_judged_where_the_platform_reports_none(fixture_set, tol):  # noqa: F811
    scenario = fixture_set.scenarios["img_t2i"].model_copy(
        update={"warmup_peak_vram_mb": 10.0, "load_peak_host_anon_mb": 100.0, "runtime_peak_host_anon_mb": 200.0}
    )

    def units(**flags):
        checks = plan_checks(scenario, JudgeRules(tol, SGLANG, **flags), is_video=False, num_frames=None)
        return sorted(c.name for c in checks if c.unit == "MiB")

    assert units() == [
        "load_peak_allocated_mb", "load_peak_host_anon_mb", "runtime_peak_allocated_mb",
        "runtime_peak_host_anon_mb", "warmup_peak_vram_mb",
    ]  # fmt: skip
    assert units(vram=False) == ["load_peak_host_anon_mb", "runtime_peak_host_anon_mb"]
    assert units(vram=False, host_anon=False) == []
    # a ROCm run: the server writes no device snapshots, so nothing comes out missing
    measurement = at_baseline(scenario, memory={})
    results = evaluate(scenario, measurement, JudgeRules(tol, SGLANG, vram=False, host_anon=False))
    assert [r.check.name for r in results if r.verdict == "missing"] == []
    results = evaluate(scenario, measurement, JudgeRules(tol, SGLANG))
    assert {r.check.name for r in results if r.verdict == "missing"} >= {"load_peak_vram_mb", "runtime_peak_vram_mb"}


def test_the_memory_checks_a_measurement_cannot_make_are_named_in_the_same_pass(fixture_set, tol):  # noqa: F811
    scenario = fixture_set.scenarios["img_t2i"].model_copy(
        update={"warmup_peak_vram_mb": 10.0, "load_peak_host_anon_mb": 100.0, "runtime_peak_host_anon_mb": 200.0}
    )
    rules = JudgeRules(tol, SGLANG)
    full = at_baseline(scenario)
    assert assess(scenario, full, rules).unreported == []
    host_only = at_baseline(scenario, memory={k: v for k, v in full.memory.items() if "host_anon" in k})
    evaluation = assess(scenario, host_only, rules)
    assert evaluation.unreported == [
        "load_peak_allocated_mb", "runtime_peak_allocated_mb", "warmup_peak_vram_mb",
    ]  # fmt: skip
    assert evaluation.results == evaluate(scenario, host_only, rules)  # the verdicts judge_limits reports
    assert assess(scenario, at_baseline(scenario, memory={}), JudgeRules(tol, SGLANG, vram=False)).unreported == [
        "load_peak_host_anon_mb", "runtime_peak_host_anon_mb",
    ]  # fmt: skip
