"""`diffperf lint` and lint.lint_baselines: every finding kind, output formats, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from pytest_diffperf._util.findings import Finding
from pytest_diffperf.commands.lint import lint_file, lint_paths
from pytest_diffperf.consistency.thresholds import threshold_files
from pytest_diffperf.perf.baselines import load_baselines, select_scenarios
from pytest_diffperf.perf.lint import lint_baselines
from tests.support.cli import Result, diffperf
from tests.support.suite import tiny_case

S = "img_t2i"


def keyed(findings) -> set[tuple[str, str, str]]:
    return {(f.severity, f.scenario, f.key) for f in findings}


def lint_doc(write, doc) -> list[Finding]:
    return lint_file(write("perf_baselines.json", doc))


def test_fixture_layout(layout):
    findings = lint_paths([layout])
    assert keyed(findings) == {
        ("warning", "img_t2i_npu", "estimated_full_test_time_s"),
        ("warning", "e2e_only", "expected_e2e_ms"),
    }


def test_finding_format():
    f = Finding("warning", "a.json", "flux", "stages_ms", "too long")
    assert str(f) == "a.json:flux:stages_ms: warning: too long"
    assert str(Finding("error", "a.json", "", "", "bad")) == "a.json:-:-: error: bad"


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        (
            {"expected_avg_denoise_ms": 104.0},
            "expected_avg_denoise_ms",
            "differs from the mean of denoise_step_ms",
        ),
        ({"expected_median_denoise_ms": 90.0}, "expected_median_denoise_ms", "(100.00) by -10.0%"),
        (
            {"stages_ms": {"DenoisingStage": 800.0}},
            "stages_ms.DenoisingStage",
            "shorter than its steps (1000.00)",
        ),
        (
            {"stages_ms": {"DenoisingStage": 2200.0}, "expected_e2e_ms": 3000.0},
            "stages_ms.DenoisingStage",
            "over 2x its steps",
        ),
        (
            {"expected_e2e_ms": 900.0},
            "stages_ms",
            "stages add up to 1030.05, +14.4% over expected_e2e_ms (900.00)",
        ),
        ({"expected_e2e_ms": 0}, "expected_e2e_ms", "is 0: this metric is unguarded"),
        ({"expected_load_ms": 0}, "expected_load_ms", "is 0: this metric is unguarded"),
        ({"estimated_full_test_time_s": None}, "estimated_full_test_time_s", "missing"),
        ({"expected_laod_ms": 5.0}, "expected_laod_ms", "unknown key"),
    ],
)
def test_scenario_warnings(write, h100_doc, change, key, fragment):
    scenario = h100_doc["scenarios"][S]
    for name, value in change.items():
        if isinstance(value, dict):
            scenario[name].update(value)
        elif value is None:
            del scenario[name]
        else:
            scenario[name] = value
    findings = [f for f in lint_doc(write, h100_doc) if f.scenario == S]
    assert [(f.severity, f.key) for f in findings] == [("warning", key)]
    assert fragment in findings[0].message


def test_within_tolerances_no_warning(write, h100_doc):
    scenario = h100_doc["scenarios"][S]
    scenario["expected_avg_denoise_ms"] = 102.9  # < 3 %
    scenario["stages_ms"]["DenoisingStage"] = 880.0  # > 0.9 * 1000 - 20
    assert not [f for f in lint_doc(write, h100_doc) if f.scenario == S]


def test_partial_step_map_is_not_compared(write, h100_doc):
    scenario = h100_doc["scenarios"][S]
    del scenario["denoise_step_ms"]["3"]
    scenario["expected_avg_denoise_ms"] = 500.0
    assert not [f for f in lint_doc(write, h100_doc) if f.scenario == S]


def test_all_schema_errors_are_listed(write, h100_doc):
    scenario = h100_doc["scenarios"][S]
    scenario["expected_e2e_ms"] = "x"
    scenario["stages_ms"]["DecodingStage"] = float("nan")
    del scenario["expected_median_denoise_ms"]
    h100_doc["scenarios"]["vid_t2v"]["denoise_step_ms"]["-1"] = 3.0
    h100_doc["tolerances"]["pr_test"]["e2e"] = -1
    h100_doc["sampling"]["step_fractions"] = [2]
    h100_doc["runner_overrides"] = {"ci-": {S: {"expected_load_ms": "slow"}}}
    h100_doc["extra_section"] = 1
    found = keyed(lint_doc(write, h100_doc))
    assert {
        ("error", S, "expected_e2e_ms"),
        ("error", S, "stages_ms.DecodingStage"),
        ("error", S, "expected_median_denoise_ms"),
        ("error", "vid_t2v", "denoise_step_ms.-1"),
        ("error", "", "tolerances.pr_test.e2e"),
        ("error", "", "sampling.step_fractions.0"),
        ("error", S, "runner_overrides.ci-.img_t2i.expected_load_ms"),
        ("warning", "", "extra_section"),
    } <= found


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"scenarios": {', "invalid JSON"),
        ("[1]", "expected a JSON object at the top level"),
        ('{"models": []}', "neither a baseline file"),
        ('{"cases": [{"id": "a"}]}', "required key is missing"),  # the plugin's case file, linted as one
        ('{"scenarios": {"a": {}, "a": {}}}', "duplicate key"),
        ('{"scenarios": []}', "expected an object, got a list"),  # the loader's words
        ('{"scenarios": {"a": 1}}', "expected an object"),
        (
            '{"tolerances": {"e2e": 0.1}, "sampling": {"step_fractions": [0]}, "scenarios": {}}',
            "required key",
        ),
        ('{"tolerances": {"pr_test": {}}, "scenarios": {}}', "required key is missing (with step_fractions)"),
        ('{"runner_overrides": {"x": {"nope": {}}}, "scenarios": {}}', "override for a scenario that is not"),
        ('{"cases": {"a": {"ssim_threshold": 1.5}}}', "less than or equal to 1"),
        ('{"cases": {"a": {"mean_abs_diff_threshold": 300}}}', "less than or equal to 255"),
        ('{"default_psnr_threshold_image": -3}', "greater than or equal to 0"),
    ],
)
def test_file_errors(write, content, fragment):
    findings = lint_file(write("some.json", content))
    assert any(fragment in f.message for f in findings if f.severity == "error"), findings


def test_no_pr_test_profile_warns(write, h100_doc):
    h100_doc["tolerances"] = {"nightly": h100_doc["tolerances"]["pr_test"]}
    assert ("warning", "", "tolerances") in keyed(lint_doc(write, h100_doc))


def test_scenario_defined_twice_across_merged_files(write, h100_doc):
    write("perf_baselines/h100.json", h100_doc)
    fragment = write("ascend/perf_baselines_npu.json", {"scenarios": {S: h100_doc["scenarios"][S]}})
    folder = fragment.parent.parent / "perf_baselines"
    for findings in (lint_baselines(folder, "h100"), lint_baselines(load_baselines(folder, "h100"))):
        (twice,) = [f for f in findings if "also defined" in f.message]
        assert (twice.file, twice.scenario) == (str(fragment), S)


@pytest.mark.parametrize("hardware", ["h100", "npu", "musa"])
def test_lint_loaded_set_as_the_plugin_does(layout, hardware):
    """The header's count (the run's scenario set) is the lint command's: each platform's scenarios only."""
    baselines = load_baselines(layout / "perf_baselines", hardware, runner_name="")
    selected = select_scenarios(baselines, {}, hardware)
    findings = keyed(lint_baselines(baselines, selected=selected))
    assert findings == keyed(lint_paths([layout / "perf_baselines"], hardware))
    assert {scenario for _, scenario, _ in findings if scenario} <= set(selected)
    assert keyed(lint_baselines(baselines)) > findings  # unselected: every merged file's scenarios


def test_lint_thresholds_of_a_platform(layout):
    assert [x for f in threshold_files(layout / "consistency_thresholds", "b200") for x in lint_file(f)] == []


def test_folder_walk_skips_other_json(write, h100_doc):
    write("perf_baselines.json", h100_doc)
    write("other/config.json", {"models": []})
    write("cases.json", {"cases": [tiny_case("img_t2i")]})  # a case file is linted as one
    assert not [f for f in lint_paths([write("x", "").parent]) if f.severity == "error"]


def cli(*args: str) -> Result:
    return diffperf("lint", *args)


def test_cli_exit_codes_and_output(write, h100_doc, layout):
    ok = cli(str(layout))
    assert ok.returncode == 0
    assert ok.stdout.splitlines() == [
        f"{layout}/ascend/perf_baselines_npu.json:img_t2i_npu:estimated_full_test_time_s: warning: "
        "missing (SGLang uses it to partition CI suites)",
        f"{layout}/perf_baselines/h100.json:e2e_only:expected_e2e_ms: warning: is 0: this metric is unguarded",
        "0 error(s), 2 warning(s)",
    ]
    assert cli("--strict", str(layout)).returncode == 1
    h100_doc["scenarios"][S]["expected_e2e_ms"] = -1
    bad = write("perf_baselines.json", h100_doc)
    result = cli(str(bad), "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert {"severity": "error", "file": str(bad), "scenario": S, "key": "expected_e2e_ms"}.items() <= data[0].items()


def test_cli_hardware_picks_files_and_the_scenarios_judged_there(layout):
    result = cli(str(layout), "--hardware", "b200")
    assert result.returncode == 0
    assert "perf_baselines/h100.json" not in result.stdout
    assert "img_t2i_npu" not in result.stdout  # merged into b200's set, but judged on npu only (as pytest runs it)
    npu = cli(str(layout), "--hardware", "npu")
    assert "ascend/perf_baselines_npu.json:img_t2i_npu:estimated_full_test_time_s: warning" in npu.stdout


@pytest.mark.skipif(shutil.which("diffperf") is None, reason="console script not installed")
def test_console_script(layout):
    result = subprocess.run(["diffperf", "lint", str(layout)], capture_output=True, text=True)
    assert result.returncode == 0 and "0 error(s)" in result.stdout


def test_every_missing_key_of_a_case_file_is_listed(tmp_path, layout):
    """Not only the first (as loading the file for the unused entries said): each, and nothing pruned."""
    first, second = tiny_case("a"), tiny_case("b", seed=2)
    del first["model"], second["prompt"]
    bad = tmp_path / "bad_cases.json"
    bad.write_text(json.dumps({"cases": [first, second]}))
    listed = [
        f"{bad}:-:cases.0.model: error: required key is missing",
        f"{bad}:-:cases.1.prompt: error: required key is missing",
    ]
    for args in ([str(bad)], [str(layout / "perf_baselines" / "h100.json"), f"--cases={bad}"]):
        result = cli(*args)
        assert result.returncode == 1, result.stderr
        lines = result.stdout.splitlines()
        assert [line for line in lines if ": error: " in line] == listed
        assert lines[-2:][0] == "unused entries not looked for: the case file has errors"
        assert lines[-1].startswith("2 error(s), ")
    before = (layout / "perf_baselines" / "h100.json").read_bytes()
    result = cli(str(layout / "perf_baselines" / "h100.json"), f"--cases={bad}", "--prune")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"diffperf lint: error: --prune: nothing pruned: the case file has errors: {bad}: cases.0.model: required "
        f"key is missing; {bad}: cases.1.prompt: required key is missing"
    )
    assert (layout / "perf_baselines" / "h100.json").read_bytes() == before
