"""SGLang's own case lists under pytest: the items of its h100 suites, what does not meet, suites, the installed package.

No server is started: collection only, or scenarios that are skipped or fail before a server is asked for.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.sglang import H100_BASELINES, SRC, VENDORED, available

pytestmark = pytest.mark.skipif(not available(), reason="the vendored SGLang files are absent")

GPU_CASES = SRC / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py"
FOUR_GPU = ["minimax_h3_fl2va_first_frame_4gpu_h100", "vdn_h3_t2va_4gpu_h100", "fasth3_t2va_vsa_4gpu_h100"]
NOT_EXPRESSIBLE = {
    "pi05_action_http": "an action policy output (/v1/actions/generations)",
    "flux3_action_http": "an action policy output (/v1/actions/generations)",
    "flux_2_ti2i_multi_image_cache_dit": "an edit of 2 input images",
    "qwen_image_edit_2509_ti2i": "an image edit whose input images are sent to the server as URLs (multipart url[])",
    "qwen_image_layered_i2i": "an image edit whose input images are sent to the server as URLs (multipart url[])",
    "hunyuan3d_shape_gen": "a mesh (/v1/meshes)",
    "lingbot_world_realtime_plastic_beach": "a realtime video over the websocket API (/v1/realtime_video)",
}


def h100_args(cases: str = str(GPU_CASES)) -> list[str]:
    """The maintainer's command on SGLang 0.5.23's h100 files."""
    return [
        "--diffperf=pr_test",
        f"--diffperf-baselines={VENDORED / 'perf_baselines'}",
        "--diffperf-hardware=h100",
        "--diffperf-server=sglang",
        f"--diffperf-cases={cases}",
        "-p", "no:cacheprovider",
    ]  # fmt: skip


def collected(result) -> list[str]:
    return [line.split("::", 1)[1] for line in result.outlines if "::" in line]


def test_the_h100_suites_collect_every_scenario_then_the_cases_without_one(pytester):
    result = pytester.runpytest(*h100_args(), "--co", "-q")
    assert result.ret == 0
    scenarios = list(json.loads(H100_BASELINES.read_text())["scenarios"])
    items = collected(result)
    assert sorted(items) == sorted(scenarios + FOUR_GPU)  # in server groups: each group's scenarios adjacent
    assert (len(items), len(scenarios)) == (87, 84)
    assert items[:2] == ["sana_wm_ti2v", "sana_video_2b_t2v"]  # groups in order of first appearance
    result.stdout.fnmatch_lines(
        [
            "diffperf: 2 scenario(s) without a case (they fail): ideogram4_fp8_t2i, flux2_modelopt_fp8_t2i",
            "diffperf: 3 case(s) without a baseline scenario (they fail, printing the baseline to add; pytest --regen-baselines -k ID writes it): "
            + ", ".join(FOUR_GPU),
            "diffperf: 7 case(s) of SGLang's the plugin cannot run (skipped):",
        ]
    )
    for case_id, reason in NOT_EXPRESSIBLE.items():
        result.stdout.fnmatch_lines([f"diffperf:   {case_id}: not expressible yet: {reason}"])


def test_what_does_not_meet_is_listed_for_the_selected_tests_only_and_skipped_with_its_reason(pytester):
    result = pytester.runpytest(*h100_args(), "-k", "hunyuan3d_shape_gen or ideogram4_fp8_t2i or pi05", "-rs")
    result.assert_outcomes(skipped=2, failed=1, deselected=84)  # nothing started: no case has a server to ask for
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "diffperf: 1 scenario(s) without a case (they fail): ideogram4_fp8_t2i",
            "diffperf: 2 case(s) of SGLang's the plugin cannot run (skipped):",
            "diffperf:   pi05_action_http: not expressible yet: *",
            "diffperf:   hunyuan3d_shape_gen: not expressible yet: a mesh (/v1/meshes)",
            "SKIPPED*hunyuan3d_shape_gen: not expressible yet: a mesh (/v1/meshes)",
        ]
    )
    assert "flux2_modelopt_fp8_t2i" not in out and "without a baseline scenario" not in out
    assert f"scenario 'ideogram4_fp8_t2i' has a baseline in {H100_BASELINES} but no case definition" in out


def test_suites_choose_the_lists_read(pytester):
    result = pytester.runpytest(*h100_args(), "--diffperf-suites=4-gpu-h100", "--co")
    assert collected(result) == []  # not -q: the tree, not node ids
    result.stdout.fnmatch_lines(
        [
            "diffperf: suites=4-gpu-h100",
            "diffperf: 82 scenario(s) of the baseline file are SGLang's cases of other suites (1-gpu, 1-gpu-5090, "
            "1-gpu-xpu, 2-gpu), not run here: sana_wm_ti2v, sana_video_2b_t2v, pi05_action_http, flux3_action_http, "
            "qwen_image_t2i, ...",
            "diffperf: 2 scenario(s) without a case (they fail): ideogram4_fp8_t2i, flux2_modelopt_fp8_t2i",
            "*5 tests collected*",
        ]
    )
    both = pytester.runpytest(*h100_args(), "--diffperf-suites= 1-gpu , 4-gpu-h100", "--co", "-q")
    both.stdout.fnmatch_lines(
        ["diffperf: * scenario(s) of the baseline file are SGLang's cases of other suites (*2-gpu*"]
    )
    assert "without a baseline scenario" in both.stdout.str()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--diffperf-suites=3-gpu"],
            f"ERROR: diffperf: {GPU_CASES}: suite: unknown suite '3-gpu'; on h100 SGLang has: 1-gpu, *",
        ),
        (
            ["--diffperf-suites=1-gpu", "--diffperf-cases=cases.json"],
            "ERROR: diffperf: --diffperf-suites: suites are read from SGLang's case lists, and */cases.json is a "
            "JSON case file: drop --diffperf-suites, or pass gpu_cases.py (or diffperf import-cases --suite) instead",
        ),
    ],
)
def test_bad_suites_are_one_line_errors(pytester, extra, message):
    (pytester.path / "cases.json").write_text('{"cases": []}')
    result = pytester.runpytest(*h100_args(), *extra, "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_suites_without_case_lists_say_what_is_missing(pytester):
    result = pytester.runpytest(
        f"--diffperf-baselines={H100_BASELINES}", "--diffperf=pr_test", "--diffperf-suites=1-gpu"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: diffperf: --diffperf-suites: needs SGLang's case lists: pass --diffperf-cases too"]
    )


def test_the_word_sglang_is_the_installed_package_even_beside_a_folder_of_that_name(pytester, monkeypatch):
    site = pytester.path / "site"
    shutil.copytree(SRC / "sglang", site / "sglang")
    monkeypatch.syspath_prepend(str(site))
    (pytester.path / "sglang").mkdir()  # a folder named sglang where pytest runs: not what the word means
    result = pytester.runpytest(*h100_args("sglang"), "--co")
    result.stdout.fnmatch_lines(
        [
            "diffperf: cases=sglang",
            f"diffperf: SGLang's case lists {site / 'sglang' / 'multimodal_gen' / 'test' / 'server' / 'gpu_cases.py'}"
            " of release 0.5.23 (*) as on h100 (loaded with stand-ins): 78 case(s), 7 not expressible yet",
            "diffperf: note: the installed sglang does not import *",
            "*87 tests collected*",
        ]
    )


def test_diffperf_plan_shards_sglangs_lists_as_the_run_does(pytester, capsys):
    """With a not-expressible case that has no baseline scenario: collected (to be skipped) on both sides."""
    from pytest_diffperf.cli import main

    doc = json.loads(H100_BASELINES.read_text())
    del doc["scenarios"]["hunyuan3d_shape_gen"]
    folder = pytester.path / "perf_baselines"
    folder.mkdir()
    (folder / "h100.json").write_text(json.dumps(doc))
    argv = ["plan", str(folder), "--hardware", "h100", "--cases", str(GPU_CASES), "--server", "sglang"]
    assert main([*argv, "--shards", "3"]) == 0
    planned = json.loads(capsys.readouterr().out)["include"]
    args = [a if not a.startswith("--diffperf-baselines=") else f"--diffperf-baselines={folder}" for a in h100_args()]
    for entry in planned:
        result = pytester.runpytest(*args, f"--diffperf-shard={entry['shard']}/3", "--co", "-q")
        assert sorted(collected(result)) == sorted(entry["scenarios"]), entry["shard"]
    assert sum(len(e["scenarios"]) for e in planned) == 87  # 83 scenarios, 3 cases without one, hunyuan3d_shape_gen
    assert any("hunyuan3d_shape_gen" in e["scenarios"] for e in planned)


def test_the_release_is_in_the_header_and_the_results_file_and_can_be_overridden(pytester):
    older = VENDORED.parent / "v0.5.12"
    args = [
        "--diffperf=pr_test",
        f"--diffperf-baselines={older / 'perf_baselines.json'}",
        f"--diffperf-cases={older / 'src'}",
        "--diffperf-json=out.json",
        "-k", "hunyuan3d_shape_gen",
        "-p", "no:cacheprovider",
    ]  # fmt: skip
    result = pytester.runpytest(*args)
    result.assert_outcomes(skipped=1, deselected=61)
    result.stdout.fnmatch_lines(
        ["diffperf: SGLang's case lists * of release 0.5.12 (its harness has run_component_accuracy_check*"]
    )
    assert "sglang_release" not in result.stdout.str()  # the release shown once
    written = json.loads((pytester.path / "out.json").read_text())
    assert written["sglang_release"].startswith("0.5.12 (its harness has")
    result = pytester.runpytest(*args, "--diffperf-sglang-semantics=0.5.23")
    result.stdout.fnmatch_lines(["diffperf: SGLang's case lists * of release 0.5.23 (--diffperf-sglang-semantics) *"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--diffperf-sglang-semantics=latest"], "not an SGLang release number: 'latest' (expected e.g. 0.5.23)"),
        (["--diffperf-sglang-semantics=0.5.12"], "needs SGLang's case lists: pass --diffperf-cases too"),
    ],
)
def test_a_bad_semantics_release_is_a_one_line_error(pytester, extra, message):
    cases = [f"--diffperf-cases={GPU_CASES}"] if "latest" in extra[0] else []
    result = pytester.runpytest("--diffperf=pr_test", f"--diffperf-baselines={H100_BASELINES}", *cases, *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: diffperf: --diffperf-sglang-semantics: {message}"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_a_next_release_s_new_model_is_listed_with_its_reason_and_the_shown_fix_runs_it(pytester, monkeypatch):
    """0.5.23 relabelled 0.5.24 with a case of a model no table knows, whose fields do not decide it."""
    tree = pytester.path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    (tree / "sglang" / "version.py").write_text('__version__ = "0.5.24"\n')
    gpu_cases = tree / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py"
    gpu_cases.write_text(
        gpu_cases.read_text()
        + "\nONE_GPU_CASES.append(DiffusionTestCase('newimg', DiffusionServerArgs(model_path='acme/New'), "
        "T2I_sampling_params))\n"
    )
    result = pytester.runpytest(*h100_args(str(tree)), "--co", "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "diffperf: 8 case(s) of SGLang's the plugin cannot run (skipped):",
            "diffperf:   newimg: no task type is known for model 'acme/New' and its cases do not decide it *",
        ]
    )
    assert len(collected(result)) == 88  # 0.5.23's 87, and the new case (no baseline scenario: it would fail)
    table = pytester.path / "types.json"
    table.write_text('{"models": {"acme/New": "T2V"}}')  # as the reason shows it
    monkeypatch.setenv("DIFFPERF_SGLANG_TASK_TYPES", str(table))
    result = pytester.runpytest(*h100_args(str(tree)), "--co", "-q")
    result.stdout.fnmatch_lines(["diffperf: 7 case(s) of SGLang's the plugin cannot run (skipped):"])
    result.stdout.fnmatch_lines(["diffperf: 4 case(s) without a baseline scenario *newimg*"])


def test_a_baseline_file_shared_with_b200_does_not_fail_its_b200_scenarios_on_h100(pytester):
    """0.5.10, 0.5.13 and 0.5.14 keep every platform's scenarios in one file: a B200 case's is not an H100 one."""
    shared = json.loads(H100_BASELINES.read_text())
    b200 = "flux1_modelopt_nvfp4_t2i"  # a case of 1-gpu-b200 only
    shared["scenarios"][b200] = shared["scenarios"]["qwen_image_t2i"]
    folder = pytester.path / "perf_baselines"
    folder.mkdir()
    (folder / "h100.json").write_text(json.dumps(shared))
    args = [a if not a.startswith("--diffperf-baselines=") else f"--diffperf-baselines={folder}" for a in h100_args()]
    result = pytester.runpytest(*args, "--co", "-q")
    assert result.ret == 0
    assert b200 not in collected(result)
    result.stdout.fnmatch_lines(
        [
            "diffperf: 1 scenario(s) of the baseline file are SGLang's cases of other suites (1-gpu-b200), not run "
            f"here: {b200}",
            "diffperf: 2 scenario(s) without a case (they fail): ideogram4_fp8_t2i, flux2_modelopt_fp8_t2i",
        ]
    )


def test_before_0_5_21_a_case_off_perf_check_without_a_scenario_is_said_not_judged(pytester):
    """0.5.17 judges nothing of a case with run_perf_check false: without a scenario it does not fail either."""
    src = VENDORED.parent / "v0.5.17" / "src"
    baselines = src / "sglang" / "multimodal_gen" / "test" / "server" / "perf_baselines"
    args = ["--diffperf=pr_test", f"--diffperf-baselines={baselines}", "--diffperf-hardware=h100"]
    result = pytester.runpytest(*args, "--diffperf-server=sglang", f"--diffperf-cases={src}", "--co", "-q")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "diffperf: 5 case(s) without a baseline scenario, not judged (run_perf_check false, as their SGLang "
            "release leaves them): sana_wm_ti2v, flux2_modelopt_fp8_tp2_t2i, *",
        ]
    )
    assert "without a baseline scenario (they fail" not in result.stdout.str()  # every one of them is off perf check


def test_a_case_group_of_the_wrong_type_is_one_usage_error_naming_file_and_key(pytester):
    tree = pytester.path / "src"
    shutil.copytree(SRC / "sglang", tree / "sglang")
    gpu_cases = tree / "sglang" / "multimodal_gen" / "test" / "server" / "gpu_cases.py"
    gpu_cases.write_text(gpu_cases.read_text() + "\nPARAMETRIZED_CASE_GROUPS['2-gpu'] = [('f.py', 'TWO_GPU_CASES')]\n")
    result = pytester.runpytest(*h100_args(str(tree)), "--co")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    key = "PARAMETRIZED_CASE_GROUPS['2-gpu'][0]"
    assert f"ERROR: diffperf: {gpu_cases}: {key}: expected a (test file, list of DiffusionTestCase) pair" in (
        result.stderr.str()
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
