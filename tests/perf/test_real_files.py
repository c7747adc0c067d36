"""SGLang's own files (../shared/sglang-data) load unmodified and give SGLang's limits."""

from __future__ import annotations

import re

import pytest

from pytest_diffperf.commands.lint import lint_paths
from pytest_diffperf.consistency.thresholds import load_thresholds
from pytest_diffperf.perf.baselines import load_baselines
from pytest_diffperf.perf.limits import JudgeRules, get_preset, plan_checks
from pytest_diffperf.platforms import canonical_platform
from tests.support.cli import diffperf


@pytest.mark.parametrize(
    ("rel", "hardware", "count", "files"),
    [
        ("v0.5.23/perf_baselines", "h100", 84 + 13, 2),  # the npu fragment is merged, as in SGLang
        ("v0.5.23/perf_baselines", "hopper", 97, 2),
        ("v0.5.23/perf_baselines", "npu", 97, 2),  # NPU runs load h100.json + their fragment
        ("v0.5.23/perf_baselines/h100.json", None, 97, 2),
        ("v0.5.23", "sm90", 97, 2),
        ("v0.5.23/ascend/perf_baselines_npu.json", None, 13, 1),
        ("v0.5.12/perf_baselines.json", None, 46 + 5, 2),
        ("v0.5.12", None, 51, 2),
        ("v0.5.12/ascend/perf_baselines_npu.json", None, 5, 1),
    ],
)
def test_real_baselines_load(sglang_data, rel, hardware, count, files):
    platform = canonical_platform(hardware) if hardware else None  # an alias as a command reads it
    baselines = load_baselines(sglang_data / rel, platform, runner_name="")
    assert len(baselines.scenarios) == count
    assert len(baselines.files) == files
    if baselines.tolerances:
        assert set(baselines.tolerances) == {"pr_test", "long_term"}
        assert baselines.step_fractions == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]


def test_real_sources_and_raw(sglang_data):
    baselines = load_baselines(sglang_data / "v0.5.23/perf_baselines", "h100", runner_name="")
    assert baselines.primary.name == "h100.json"
    assert baselines.source["flux_image_t2i"] == baselines.primary
    npu = [name for name, path in baselines.source.items() if path.name == "perf_baselines_npu.json"]
    assert len(npu) == 13
    assert list(baselines.scenarios)[:2] == ["sana_wm_ti2v", "sana_video_2b_t2v"]  # file order kept
    assert len(baselines.raw[baselines.primary]["scenarios"]) == 84
    assert baselines.scenarios["flux_image_t2i"].steps[0] == 30.2


def test_real_every_check_builds(sglang_data):
    baselines = load_baselines(sglang_data / "v0.5.23/perf_baselines", "h100", runner_name="")
    preset = get_preset("sglang")
    for profile in ("pr_test", "long_term"):
        tol = baselines.profile(profile, env={})
        for scenario in baselines.scenarios.values():
            checks = plan_checks(
                scenario,
                JudgeRules(tol, preset, tuple(baselines.step_fractions)),
                is_video=False,
                num_frames=None,
            )
            assert checks[0].name == "e2e"


def upper(expected: float, rel: float, pad: float) -> float:
    """SGLang's calculate_upper_bound."""
    return max(expected * (1 + rel), expected + pad)


def test_flux_image_t2i_limits_match_sglang(sglang_data):
    baselines = load_baselines(sglang_data / "v0.5.23/perf_baselines", "h100", runner_name="")
    scenario = baselines.scenarios["flux_image_t2i"]
    tol = baselines.profile("pr_test", env={})
    checks = plan_checks(
        scenario,
        JudgeRules(tol, get_preset("sglang"), tuple(baselines.step_fractions)),
        is_video=False,
        num_frames=None,
    )
    limits = {c.name: c.limit for c in checks}

    # The figures quoted in the brief.
    assert limits["e2e"] == pytest.approx(8366.26, abs=0.005)
    assert limits["step[0]"] == pytest.approx(151.0)
    assert limits["stage[TextEncodingStage]"] == pytest.approx(140.86)
    assert limits["stage[DecodingStage]"] == pytest.approx(460.31)

    # Every other check, by SGLang's formula (pr_test: e2e .25, load .4, agg .2, step .3, stages .25/.8).
    raw = baselines.raw[baselines.primary]["scenarios"]["flux_image_t2i"]
    expected = {
        "e2e": upper(raw["expected_e2e_ms"], 0.25, 20),
        "load": upper(raw["expected_load_ms"], 0.4, 20),
        "avg_denoise": upper(raw["expected_avg_denoise_ms"], 0.2, 20),
        "median_denoise": upper(raw["expected_median_denoise_ms"], 0.2, 20),
        "load_peak_allocated_mb": upper(raw["load_peak_allocated_mb"], 0.01, 128),
        "runtime_peak_allocated_mb": upper(raw["runtime_peak_allocated_mb"], 0.02, 128),
    }
    # 50 steps: max index 49, fractions 0 .2 .4 .6 .8 1 -> 0 10 20 29 39 49.
    for i in (0, 10, 20, 29, 39, 49):
        step = raw["denoise_step_ms"][str(i)]
        expected[f"step[{i}]"] = upper(step, 4.0, 80) if i == 0 else upper(step, 0.3, 20)
    for stage, ms in raw["stages_ms"].items():
        if stage == "DenoisingStage":
            expected[f"stage[{stage}]"] = upper(ms, 0.25, 120)
        elif stage.endswith("DecodingStage"):
            expected[f"stage[{stage}]"] = upper(ms, max(0.8, 0.9), 450)
        else:
            expected[f"stage[{stage}]"] = upper(ms, 0.8, 120)
    assert limits == pytest.approx(expected)


def test_real_thresholds(sglang_data):
    single = load_thresholds(sglang_data / "v0.5.12/consistency_threshold.json")
    assert len(single.cases) == 43
    per_platform = load_thresholds(sglang_data / "v0.5.23/consistency_thresholds", "h100")
    assert len(per_platform.cases) == 47
    flux = per_platform.for_case("flux_image_t2i", is_video=False)
    assert (flux.clip, flux.ssim, flux.psnr, flux.mad) == (0.97, 0.95, 24.0, 5.5)
    # A platform without its own file uses H100's, as SGLang does.
    assert load_thresholds(sglang_data / "v0.5.23", "npu").cases == per_platform.cases


def test_lint_real_files_reports_known_inconsistencies(sglang_data):
    findings = lint_paths([sglang_data])
    assert not [f for f in findings if f.severity == "error"]
    got = {(f.file.split("sglang-data/")[1], f.scenario, f.key) for f in findings}
    h100 = "v0.5.23/perf_baselines/h100.json"
    expected = {
        (h100, "fastwan2_2_ti2v_5b", "expected_median_denoise_ms"),  # 112.67 vs median 35.00
        (h100, "ltx_2.3_one_stage_ti2v", "expected_avg_denoise_ms"),  # -41 %
        (h100, "wan2_2_animate_2_14b_ref2v", "expected_avg_denoise_ms"),  # -42.5 %
        (h100, "cosmos3_nano_t2i", "stages_ms"),  # stages 25 % over e2e
        (h100, "flux2_modelopt_fp8_t2i", "expected_e2e_ms"),  # 0: unguarded
        (
            "v0.5.12/perf_baselines.json",
            "layerwise_offload",
            "stages_ms.DenoisingStage",
        ),  # shorter than steps
        ("v0.5.23/ascend/perf_baselines_npu.json", "flux_2_klein_4b_t2i_1npu", "stages_ms.DenoisingStage"),
        ("v0.5.23/ascend/perf_baselines_npu.json", "flux_image_t2i_npu", "estimated_full_test_time_s"),
    }
    assert expected <= got
    assert ("v0.5.23/perf_baselines/h100.json", "flux_image_t2i", "expected_avg_denoise_ms") not in got


def test_lint_cli_on_real_files(sglang_data):
    result = diffperf("lint", str(sglang_data / "v0.5.23"), "--hardware", "h100")
    assert result.returncode == 0, result.stderr
    assert "h100.json:fastwan2_2_ti2v_5b:expected_median_denoise_ms: warning:" in result.stdout
    assert re.fullmatch(r"0 error\(s\), \d+ warning\(s\)", result.stdout.strip().splitlines()[-1])
    strict = diffperf("lint", "--strict", str(sglang_data / "v0.5.23"))
    assert strict.returncode == 1
