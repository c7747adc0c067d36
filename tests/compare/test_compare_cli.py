"""`diffperf compare`: the dry run, and every user error as one line naming the file or option (exit 2)."""

from __future__ import annotations

import json
import sys

import psutil
import pytest

from pytest_diffperf.cases import load_case_file
from pytest_diffperf.compare.engine import plan_runs
from pytest_diffperf.launchers import ReferenceLauncher
from tests.support.compare import compare, compare_here, write_cases
from tests.support.suite import tiny_case

pytestmark = pytest.mark.server  # starts server processes


class MarkerLauncher(ReferenceLauncher):
    """A "server" that only leaves a marker file: proof of whether anything was started."""

    name = "marker"

    def __init__(self, marker):
        self.marker = marker

    def program(self) -> list[str]:
        return [sys.executable, "-c", f"open({str(self.marker)!r}, 'w').close()"]


def test_dry_run_prints_commands_and_requests_and_starts_nothing(tmp_path, capsys, launchers):
    marker = tmp_path / "started"
    launchers(MarkerLauncher(marker))
    cases = [tiny_case("a"), tiny_case("b", seed=2), tiny_case("c", "--inject-fail-startup")]
    write_cases(tmp_path / "cases.json", cases)
    out_file, logs = tmp_path / "out.json", tmp_path / "logs"
    argv = ["--config", str(tmp_path / "cases.json"), "--output", str(out_file), "--log-dir", str(logs)]
    children = {p.pid for p in psutil.Process().children(recursive=True)}  # other tests' servers may run
    code = compare_here(*argv, "--frameworks", "marker", "reference", "--dry-run")
    out = capsys.readouterr().out
    assert code == 0
    assert not marker.exists() and not out_file.exists() and not logs.exists()
    assert {p.pid for p in psutil.Process().children(recursive=True)} == children
    assert "dry run: 6 run(s) of 1 warmup + 3 measured request(s); nothing is started" in out
    blocks = out.split("\n\n")[1:]
    assert [b.splitlines()[0] for b in blocks] == [
        f"{c} ({f}): tiny/flux-t2i, text-to-image" for f in ("marker", "reference") for c in "abc"
    ]
    first = blocks[3].splitlines()  # a (reference)
    assert first[1].startswith(
        f"  server:  {sys.executable} -m pytest_diffperf.refserver serve --model-path tiny/flux-t2i"
    )
    assert "--port 30000" in first[1] and "--warmup-mode server" in first[1]
    assert first[2].startswith("  env:     SGLANG_DIFFUSION_STAGE_LOGGING=1 SGLANG_PERF_LOG_DIR=")
    request = json.loads(first[3].removeprefix("  request: POST /v1/images/generations "))
    assert request == {
        "model": "tiny/flux-t2i",
        "prompt": "a red bicycle",
        "size": "64x64",
        "n": 1,
        "response_format": "b64_json",
        "seed": 1,
        "num_inference_steps": 4,
    }
    assert blocks[4].splitlines()[1] == "  server:  the one above (same settings)"
    assert "--inject-fail-startup" in blocks[5]
    # The probe works: without --dry-run the marker "server" is started (and exits, an error).
    assert compare_here(*argv, "--frameworks", "marker", "--case-ids", "a") == 1
    assert marker.exists()


def test_dry_run_of_a_failing_setup_exits_0(tmp_path):
    write_cases(tmp_path / "cases.json", [tiny_case("nostart", "--inject-fail-startup")])
    proc = compare("--config", "cases.json", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "nostart (sglang): tiny/flux-t2i" in proc.stdout and "  server:  sglang serve " in proc.stdout


def test_default_frameworks_are_those_the_cases_list(tmp_path, launchers):
    launchers(MarkerLauncher(tmp_path / "unused"))
    cases = [
        tiny_case("listed", frameworks={"marker": {"serve_args": "--x 1"}, "sglang": {}}),
        tiny_case("plain", frameworks={}),
        tiny_case("only_marker", frameworks={"marker": {}}),
    ]
    write_cases(tmp_path / "cases.json", cases)
    case_file = load_case_file(tmp_path / "cases.json")
    runs, left_out = plan_runs(case_file, tmp_path / "cases.json", None, None)
    assert [r.label for r in runs] == ["listed (marker)", "only_marker (marker)", "listed (sglang)", "plain (sglang)"]
    assert "--x 1" in " ".join(runs[0].launcher.command(runs[0].spec, 1)) and left_out == []
    # A named framework that takes SGLang's args runs the cases listing sglang or nothing, with that entry.
    runs, left_out = plan_runs(case_file, tmp_path / "cases.json", None, ["reference"])
    assert [r.label for r in runs] == ["listed (reference)", "plain (reference)"]
    assert left_out == ["only_marker (reference): the case has no 'reference' entry"]
    assert compare_here("--config", str(tmp_path / "cases.json"), "--dry-run") == 0


BAD_FILES = [
    (None, "cases.json: file not found"),
    ("{", "cases.json: invalid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    ({"cases": [{"id": "a"}]}, "cases.json: cases.0.model: required key is missing (and 2 more problem(s))"),
    (
        {"measurement_repeats": 0, "cases": []},
        "cases.json: measurement_repeats: expected greater than 0, got 0",
    ),
    ({"cases": [tiny_case("a"), tiny_case("a")]}, "cases.json: cases.1.id: duplicate case id 'a'"),
    (
        {"cases": [tiny_case("a", frameworks={"vllm-omni": {}})]},
        "cases.json: cases.0.frameworks.vllm-omni: unknown launcher 'vllm-omni'; known: reference, sglang"
        + " (frameworks: see docs/compare.md)",
    ),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES)
def test_bad_case_file(tmp_path, content, message):
    if content is not None:
        (tmp_path / "cases.json").write_text(content if isinstance(content, str) else json.dumps(content))
    proc = compare("--config", "cases.json", "--dry-run", cwd=tmp_path)
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, f"diffperf compare: error: {message}\n", "")


BAD_ARGUMENTS = [
    (["--case-ids", "a", "zz"], "cases.json: cases: no case 'zz' (--case-ids); known: a, ab"),
    (["--case-ids", "x"], "cases.json: cases: no case 'x' (--case-ids); known: a, ab"),
    (
        ["--frameworks", "vllm"],
        "--frameworks: unknown launcher 'vllm'; known: reference, sglang (frameworks: see docs/compare.md)",
    ),
    (["--measurement-repeats", "0"], "argument --measurement-repeats: expected an integer >= 1, got '0'"),
    (["--measurement-repeats", "two"], "argument --measurement-repeats: expected an integer >= 1, got 'two'"),
    (
        ["--startup-timeout", "-5"],
        "argument --startup-timeout: expected a positive number of seconds, at most 604800 (a week), got '-5'",
    ),
    (
        ["--startup-timeout", "nan"],
        "argument --startup-timeout: expected a positive number of seconds, at most 604800 (a week), got 'nan'",
    ),
    (["--report", "nowhere.jsonl"], "nowhere.jsonl: file not found"),
    (
        ["--output", "cases.json/out"],
        "--output: cannot create cases.json/out/comparison-results.json: cases.json is not a folder",
    ),
    (["--log-dir", "cases.json"], "--log-dir: cases.json is a file; expected a folder"),
    (["--journal", "a.jsonl", "--history", "b.jsonl"], "--history: the old name of --journal: give --journal alone"),
]


@pytest.mark.parametrize(("args", "message"), BAD_ARGUMENTS)
def test_bad_arguments(tmp_path, args, message):
    write_cases(tmp_path / "cases.json", [tiny_case("a"), tiny_case("ab")])
    proc = compare("--config", "cases.json", *args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[-1] == f"diffperf compare: error: {message}"
    assert "Traceback" not in proc.stderr and not (tmp_path / "comparison-logs").exists()


def test_close_case_ids_are_suggested(tmp_path):
    write_cases(tmp_path / "cases.json", [tiny_case("flux_a"), tiny_case("flux_b"), tiny_case("sd")])
    proc = compare("--config", "cases.json", "--case-ids", "flux", cwd=tmp_path)
    assert proc.stderr == "diffperf compare: error: cases.json: cases: no case 'flux' (--case-ids); did you mean: flux_a, flux_b\n"  # fmt: skip


def test_config_or_report_is_required(tmp_path):
    proc = compare(cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (
        2,
        "diffperf compare: error: give --cases CASES.json to run, or --report FILE.jsonl to print a trend\n",
    )


def test_a_damaged_journal_fails_before_anything_runs(tmp_path):
    write_cases(tmp_path / "cases.json", [tiny_case("a")])
    (tmp_path / "journal.jsonl").write_text('{"timestamp": "t", "results": []}\nnot json\n')
    proc = compare("--config", "cases.json", "--frameworks", "reference", "--journal", "journal.jsonl", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "diffperf compare: error: journal.jsonl:2: invalid JSON: Expecting value at column 1\n"
    assert not (tmp_path / "comparison-logs").exists() and not (tmp_path / "comparison-results.json").exists()


def test_a_long_case_list_is_cut_and_a_typo_gets_a_close_match(tmp_path):
    write_cases(tmp_path / "cases.json", [tiny_case(f"case_{n:02d}") for n in range(12)])
    proc = compare("--config", "cases.json", "--case-ids", "zz", cwd=tmp_path)
    assert proc.stderr.endswith("no case 'zz' (--case-ids); known: " + ", ".join(f"case_{n:02d}" for n in range(10)) + ", ... (12 in all)\n")  # fmt: skip
    proc = compare("--config", "cases.json", "--case-ids", "cas_03", cwd=tmp_path)
    assert "no case 'cas_03' (--case-ids); did you mean: case_03, " in proc.stderr
