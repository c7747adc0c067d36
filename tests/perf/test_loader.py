"""Baseline loading: layouts, fragments, runner overrides, profiles, environment overrides."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.perf.baselines import ENV_OVERRIDES, baseline_files, load_baselines
from pytest_diffperf.platforms import PLATFORMS, baseline_file_stem, canonical_platform


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("sm90", "h100"),
        ("Hopper", "h100"),
        ("H100", "h100"),
        ("sm_100", "b200"),
        ("blackwell", "b200"),
        ("SM120", "5090"),
        ("rtx-5090", "5090"),
        ("rtx_5090", "5090"),
        ("xpu", "xpu_b60"),
        ("bmg", "xpu_b60"),
        ("xpu-b60", "xpu_b60"),
        ("intel_xpu_b60", "xpu_b60"),
        ("npu", "npu"),
        ("musa", "musa"),
        ("cpu", "cpu"),
    ],
)
def test_platform_aliases(alias, canonical):
    assert canonical_platform(alias) == canonical


def test_npu_and_musa_use_the_default_gpu_file():
    assert baseline_file_stem("npu") == baseline_file_stem("musa") == "h100"
    assert baseline_file_stem("rocm") == "h100" and baseline_file_stem("b200") == "b200"


def test_unknown_platform_lists_known_names():
    with pytest.raises(DiffperfError) as exc:
        canonical_platform("a100")
    assert "'a100'" in str(exc.value)
    for name in PLATFORMS:
        assert name in str(exc.value)


def test_platform_dir_merges_fragments(layout):
    baselines = load_baselines(layout / "perf_baselines", "h100", runner_name="")
    assert [p.relative_to(layout).as_posix() for p in baselines.files] == [
        "perf_baselines/h100.json",
        "ascend/perf_baselines_npu.json",
        "musa/perf_baselines_musa.json",
    ]
    assert list(baselines.scenarios) == [
        "img_t2i",
        "vid_t2v",
        "e2e_only",
        "io_bound",
        "img_t2i_npu",
        "img_t2i_musa",
    ]
    assert baselines.source["img_t2i_npu"] == layout / "ascend" / "perf_baselines_npu.json"
    assert baselines.source["img_t2i"] == baselines.primary


@pytest.mark.parametrize(
    ("rel", "hardware", "primary"),
    [
        ("perf_baselines", "b200", "perf_baselines/b200.json"),
        ("", "b200", "perf_baselines/b200.json"),  # the folder above perf_baselines/
        ("perf_baselines/b200.json", None, "perf_baselines/b200.json"),
        ("perf_baselines", "npu", "perf_baselines/h100.json"),
        ("perf_baselines", "musa", "perf_baselines/h100.json"),
    ],
)
def test_layout_resolution(layout, rel, hardware, primary):
    files = baseline_files(layout / rel, hardware)
    assert files[0] == layout / primary
    assert len(files) == 3


def test_fragment_alone_has_no_profile(layout):
    baselines = load_baselines(layout / "ascend" / "perf_baselines_npu.json")
    assert list(baselines.scenarios) == ["img_t2i_npu"]
    assert baselines.files == [layout / "ascend" / "perf_baselines_npu.json"]
    with pytest.raises(DiffperfError, match="no tolerances"):
        baselines.profile("pr_test")


def test_single_file_layout_with_flat_tolerances(single):
    for path in (single, single / "perf_baselines.json"):
        baselines = load_baselines(path, runner_name="")
        assert list(baselines.scenarios) == ["img_t2i", "img_t2i_npu"]
        assert baselines.flat_tolerances
        # A legacy flat dict serves every profile name.
        assert baselines.profile("pr_test", env={}) == baselines.profile("anything", env={})
        assert baselines.profile("long_term", env={}).e2e == 0.25


def test_profiles_by_name(layout):
    baselines = load_baselines(layout / "perf_baselines", "h100", runner_name="")
    assert baselines.profile("pr_test", env={}).load == 0.4
    assert baselines.profile("long_term", env={}).e2e == 0.15
    assert baselines.profile("long_term", env={}).load is None
    with pytest.raises(DiffperfError, match=r"unknown tolerance profile 'nightly'; the file has: long_term, pr_test"):
        baselines.profile("nightly", env={})


def test_env_overrides(layout):
    baselines = load_baselines(layout / "perf_baselines", "h100", runner_name="")
    env = {var: str(0.5 + i / 100) for i, var in enumerate(ENV_OVERRIDES.values())}
    tol = baselines.profile("pr_test", env=env)
    assert [getattr(tol, name) for name in ENV_OVERRIDES] == [0.5 + i / 100 for i in range(len(ENV_OVERRIDES))]
    assert tol.load == 0.4  # no variable for these two, as in SGLang
    assert tol.host_anon is None
    assert baselines.profile("pr_test", env={"SGLANG_E2E_TOLERANCE": " "}).e2e == 0.25  # blank = unset


@pytest.mark.parametrize("value", ["abc", "-0.1", "nan", "inf"])
def test_bad_env_value_names_the_variable(layout, value):
    baselines = load_baselines(layout / "perf_baselines", "h100", runner_name="")
    with pytest.raises(DiffperfError) as exc:
        baselines.profile("pr_test", env={"SGLANG_STAGE_TIME_TOLERANCE": value})
    assert str(exc.value).startswith("SGLANG_STAGE_TIME_TOLERANCE: expected a non-negative number")


@pytest.mark.parametrize(
    ("runner", "prefix", "e2e", "load"),
    [
        ("b200-pool-a-7", "b200-pool-a", 2000.0, 1000.0),  # the first matching prefix wins
        ("b200-pool-b-1", "b200-pool", 3000.0, 5000.0),
        ("h100-runner", None, 1100.0, 1000.0),
        ("", None, 1100.0, 1000.0),
    ],
)
def test_runner_overrides(layout, runner, prefix, e2e, load):
    baselines = load_baselines(layout / "perf_baselines", "b200", runner_name=runner)
    assert baselines.runner_prefix == prefix
    scenario = baselines.scenarios["img_t2i"]
    assert (scenario.expected_e2e_ms, scenario.expected_load_ms) == (e2e, load)
    assert scenario.expected_avg_denoise_ms == 100.0  # shallow update: other fields untouched
    assert baselines.raw[baselines.primary]["scenarios"]["img_t2i"]["expected_e2e_ms"] == 1100.0  # raw unchanged


def test_runner_name_defaults_to_env(layout, monkeypatch):
    monkeypatch.setenv("RUNNER_NAME", "b200-pool-a-0")
    assert load_baselines(layout / "perf_baselines", "b200").runner_prefix == "b200-pool-a"


def test_unknown_keys_are_kept(write, h100_doc):
    h100_doc["scenarios"]["img_t2i"]["future_metric_ms"] = {"a": 1}
    h100_doc["future_section"] = [1, 2]
    path = write("perf_baselines.json", h100_doc)
    baselines = load_baselines(path, runner_name="")
    assert baselines.scenarios["img_t2i"].model_extra == {"future_metric_ms": {"a": 1}}
    assert baselines.raw[path]["future_section"] == [1, 2]


def test_integers_and_nulls_accepted(write, h100_doc):
    scenario = h100_doc["scenarios"]["img_t2i"]
    scenario["expected_e2e_ms"] = 1100
    scenario["stages_ms"]["per_frame_generation"] = None
    scenario["notes"] = None
    baselines = load_baselines(write("perf_baselines.json", h100_doc), runner_name="")
    assert baselines.scenarios["img_t2i"].expected_e2e_ms == 1100.0
    assert baselines.scenarios["img_t2i"].stages_ms["per_frame_generation"] is None


def test_later_fragment_wins_on_the_same_key(write, h100_doc):
    write("perf_baselines/h100.json", h100_doc)
    npu = {"scenarios": {"img_t2i": {**h100_doc["scenarios"]["img_t2i"], "expected_e2e_ms": 1.0}}}
    fragment = write("ascend/perf_baselines_npu.json", npu)
    baselines = load_baselines(fragment.parent.parent / "perf_baselines", "h100", runner_name="")
    assert baselines.scenarios["img_t2i"].expected_e2e_ms == 1.0
    assert baselines.source["img_t2i"] == fragment


def test_raw_is_the_parsed_json(layout):
    baselines = load_baselines(layout / "perf_baselines", "h100", runner_name="")
    for path in baselines.files:
        assert baselines.raw[path] == json.loads(path.read_text())
