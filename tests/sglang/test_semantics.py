"""The semantics table: one test per row, on the vendored releases (or the release the override names).

Each row changes what a converted case sends, starts or judges; the plugin-level effect of
``perf_check_off`` and ``missing_scenario`` (nothing judged, no baseline needed) is run on the
reference server in tests/plugin/test_sglang_semantics.py.
"""

from __future__ import annotations

import pytest
from packaging.version import Version

from pytest_diffperf.cases import Case, load_case_file
from pytest_diffperf.launchers import Launcher, ServerSpec
from pytest_diffperf.perf.limits import JudgeRules, get_preset, plan_checks, with_allowances
from pytest_diffperf.perf.schema import ScenarioBaseline, Tolerances
from pytest_diffperf.platforms import Platform
from pytest_diffperf.sglang import semantics
from tests.support.paths import SGLANG_DATA

SRC = {v: SGLANG_DATA / f"v{v}" / "src" for v in ("0.5.12", "0.5.17", "0.5.23")}
pytestmark = pytest.mark.skipif(
    not all(p.is_dir() for p in SRC.values()), reason="the vendored SGLang files are absent"
)


def cases(version: str, hardware: Platform = "h100", override: str | None = None) -> dict[str, Case]:
    return {c.id: c for c in load_case_file(SRC[version], hardware, semantics=override).cases}


def command(case: Case) -> list[str]:
    return Launcher().command(ServerSpec.for_case(case, "sglang"), 30000)


def test_the_table_has_one_row_per_rule_each_citing_where_it_was_read():
    assert [row.name for row in semantics.TABLE] == list(semantics.ROWS)
    for row in semantics.TABLE:
        assert Version(row.since) > Version("0.5.6") and row.old != row.new
        assert ".py" in row.where, row.name
    rules = semantics.Semantics(Version("0.5.20"), "test").describe()
    assert rules["perf_check_off"] == semantics.ROWS["perf_check_off"].old
    assert semantics.Semantics(Version("0.5.21"), "test").has("perf_check_off")


@pytest.mark.parametrize(
    ("version", "judged"), [("0.5.12", "nothing"), ("0.5.17", "nothing"), ("0.5.23", "e2e_and_load")]
)
def test_perf_check_off_missing_scenario_and_e2e_scope(version, judged):
    off = [c for c in cases(version).values() if not c.run_perf_check]
    assert off and {c.judged_without_perf_check for c in off} == {judged}
    on = [c for c in cases(version).values() if c.run_perf_check]
    assert {c.judged_without_perf_check for c in on} == {"e2e_and_load"}


def test_text_url_image_to_video_extras_are_dropped_before_0_5_21():
    new = cases("0.5.23")["wan2_2_ti2v_5b"].sglang_request_extra
    old = cases("0.5.23", override="0.5.20")["wan2_2_ti2v_5b"].sglang_request_extra
    assert new["quality"] == "exact" and "reference_url" in new
    assert "quality" not in old and old["reference_url"] == new["reference_url"]


def test_the_access_log_flag_from_0_5_18():
    assert "--uvicorn-access-log-exclude-prefixes" not in command(cases("0.5.17")["qwen_image_t2i"])
    assert command(cases("0.5.23")["qwen_image_t2i"])[-2:] == ["--uvicorn-access-log-exclude-prefixes", "/health"]


def test_the_warmup_flag_by_release():
    assert cases("0.5.12")["qwen_image_t2i"].frameworks["sglang"].serve_args == "--warmup --strict-ports"
    old = cases("0.5.12", override="0.5.8")["qwen_image_t2i"]
    assert old.frameworks["sglang"].serve_args == "--enable-warmup --strict-ports"
    assert "--warmup" not in cases("0.5.17")["qwen_image_t2i"].frameworks["sglang"].serve_args  # field gone
    # warmup_always: 0.5.9 has no enable_warmup field, and its fixture always adds --warmup
    always = cases("0.5.17", override="0.5.9")["qwen_image_t2i"]
    assert always.frameworks["sglang"].serve_args == "--warmup --strict-ports"


def test_text_to_video_num_frames_cfg_parallel_and_ulysses_of_the_oldest_releases():
    new = cases("0.5.12")
    old = cases("0.5.12", override="0.5.9")
    assert new["wan22_modelopt_fp8_t2v"].num_frames == 17 and old["wan22_modelopt_fp8_t2v"].num_frames is None
    assert "--enable-cfg-parallel" in new["wan2_1_t2v_1.3b_cfg_parallel"].frameworks["sglang"].serve_args
    assert "--enable-cfg-parallel" not in old["wan2_1_t2v_1.3b_cfg_parallel"].frameworks["sglang"].serve_args
    oldest = cases("0.5.12", override="0.5.6")
    assert oldest["qwen_image_t2i"].frameworks["sglang"].serve_args.startswith("--ulysses-degree 1 ")
    assert not new["qwen_image_t2i"].frameworks["sglang"].serve_args.startswith("--ulysses-degree")


def test_quality_pins_come_with_the_release_that_added_them():
    assert "quality" not in (cases("0.5.17")["qwen_image_t2i"].sglang_request_extra or {})
    pinned = cases("0.5.23")["qwen_image_t2i"]
    assert pinned.sglang_request_extra == {"quality": "exact"}
    assert "--warmup-sampling-params" in pinned.frameworks["sglang"].serve_args


def test_rocm_skips_ring_attention_cases_and_amd_video_jobs_get_2400_s():
    rocm = load_case_file(SRC["0.5.12"], "rocm")
    reasons = {c.id: c.reason for c in rocm.not_expressible}
    assert reasons["qwen_image_t2i_2_gpus"].startswith("SGLang's fixture skips it on ROCm: ring attention")
    assert {c.timeout_s for c in rocm.cases if c.task.endswith("video")} == {2400.0}
    assert {c.timeout_s for c in cases("0.5.12").values() if c.task.endswith("video")} == {1200.0}
    oldest = cases("0.5.12", "rocm", override="0.5.6")
    assert "qwen_image_t2i_2_gpus" in oldest
    assert {c.timeout_s for c in oldest.values() if c.task.endswith("video")} == {1200.0}


def test_rows_the_plugin_does_not_apply_say_why():
    kept = {row.name: row.not_applied for row in semantics.TABLE if row.not_applied}
    assert set(kept) == {"strict_ports", "model_type_flag"}
    assert "--strict-ports" in command(cases("0.5.12", override="0.5.9")["qwen_image_t2i"])


def test_repeated_requests_are_judged_each_from_0_5_20_and_the_last_in_0_5_19():
    repeated = {cid for cid, c in cases("0.5.23").items() if c.perf_repeat_requests > 1}
    assert len(repeated) == 3  # 0.5.23's H100 cases with perf_repeat_requests: 2
    assert {cases("0.5.23")[cid].judged_requests for cid in repeated} == {"each"}
    assert {cases("0.5.23", override="0.5.19")[cid].judged_requests for cid in repeated} == {"last"}
    assert {c.judged_requests for c in cases("0.5.23").values() if c.perf_repeat_requests == 1} == {"all"}


def test_required_baselines_e2e_and_load_from_0_5_21_vram_from_0_5_19_for_perf_checked_cases():
    by_release = {r: cases("0.5.23", override=r) for r in ("0.5.23", "0.5.20", "0.5.18")}
    checked = next(cid for cid, c in by_release["0.5.23"].items() if c.run_perf_check)
    unchecked = next(cid for cid, c in by_release["0.5.23"].items() if not c.run_perf_check)
    vram = ["load_peak_vram_mb", "runtime_peak_vram_mb"]
    e2e_load = ["expected_e2e_ms", "expected_load_ms"]
    assert by_release["0.5.23"][checked].required_baselines == [*e2e_load, *vram]
    assert by_release["0.5.23"][unchecked].required_baselines == e2e_load  # validate_e2e/_load run for every case
    assert by_release["0.5.20"][checked].required_baselines == vram
    assert by_release["0.5.18"][checked].required_baselines == []


@pytest.mark.parametrize(
    ("version", "override", "allowances"),
    [("0.5.23", None, "0.5.13"), ("0.5.17", None, "0.5.13"), ("0.5.12", None, "0.5.12"), ("0.5.12", "0.5.11", "0.5.6")],
)
def test_step_and_decoding_allowances_follow_the_release(version, override, allowances):
    """Rows step_allowances (0.5.13) and decoding_allowance (0.5.12): the case carries its release's allowances."""
    assert {c.limit_allowances for c in cases(version, override=override).values()} == {allowances}


def test_the_allowances_change_the_first_step_video_step_and_decoding_limits():
    base = get_preset("sglang")
    tol = Tolerances(e2e=0.25, denoise_stage=0.25, non_denoise_stage=0.8, denoise_step=0.3, denoise_agg=0.2)
    scenario = ScenarioBaseline(
        stages_ms={"VaeDecodingStage": 500.0}, denoise_step_ms={"0": 100.0, "4": 100.0}, expected_e2e_ms=1000.0,
        expected_avg_denoise_ms=100.0, expected_median_denoise_ms=100.0,
    )  # fmt: skip

    def limits_of(release: str) -> dict[str, float]:
        rules = JudgeRules(tol, with_allowances(base, release), (0.0, 1.0))
        return {c.name: c.limit for c in plan_checks(scenario, rules, is_video=True, num_frames=None)}

    assert limits_of("0.5.13") == {
        **limits_of("0.5.13"),
        "step[0]": 500.0,
        "step[4]": 260.0,
        "stage[VaeDecodingStage]": 950.0,
    }
    assert {k: limits_of("0.5.12")[k] for k in ("step[0]", "step[4]", "stage[VaeDecodingStage]")} == {
        "step[0]": 140.0,
        "step[4]": 130.0,
        "stage[VaeDecodingStage]": 950.0,
    }
    assert limits_of("0.5.6")["stage[VaeDecodingStage]"] == 900.0  # non_denoise_stage 0.8, the 120 ms stage pad
