"""Shards and xdist workers as a user sees them: options, skips, errors, a failed shard merged."""

from __future__ import annotations

import json
import re

import pytest

from pytest_diffperf.cli import main
from tests.support.suite import GENEROUS, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes


def two_groups(suite, **changes) -> list[str]:
    cases = [tiny_case("a1"), tiny_case("a2", seed=2), tiny_case("b1", "--inject-delay DenoisingStage=1", **changes)]
    return suite(cases, {c["id"]: GENEROUS for c in cases})


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--diffperf-shard=3/2"], "--diffperf-shard: shard K/N needs 1 <= K <= N (K is 1-based), got '3/2'"),
        (
            ["--diffperf-shard=two"],
            "--diffperf-shard: expected K/N with whole numbers (shard K of N, 1-based, e.g. 2/4), got 'two'",
        ),
        (["--diffperf-shard-id=1"], "--diffperf-shard-id: also needs --diffperf-num-shards"),
        (["--diffperf-shard=1/2", "--diffperf-num-shards=2"], "--diffperf-shard: give either --diffperf-shard K/N or"),
        (["--diffperf-shard=3/3"], "cannot make 3 shards of 2 server group(s): use 1 to 2 shards"),
    ],
)
def test_bad_shard_options_are_usage_errors(pytester, suite, flags, message):
    result = pytester.runpytest(*two_groups(suite), *flags)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: diffperf: {message}*"])


def test_shards_keep_server_groups_whole_and_other_tests_run_in_shard_1(pytester, suite):
    args = two_groups(suite)
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    collected = []
    for k in (1, 2):
        result = pytester.runpytest(*args, "baselines.json", "test_plain.py", f"--diffperf-shard={k}/2", "--co", "-q")
        collected.append([line for line in result.outlines if "::" in line])
    assert collected == [["baselines.json::a1", "baselines.json::a2", "test_plain.py::test_ok"], ["baselines.json::b1"]]
    result = pytester.runpytest(*args, "--diffperf-shard-id=2", "--diffperf-num-shards=2", "--co")
    result.stdout.fnmatch_lines(
        ["diffperf: shard=2/2", "diffperf: shard 2/2: 1 scenario(s), 1 server start(s), estimated 30 s"]
    )
    result.stdout.fnmatch_lines(["*1/3 tests collected (2 deselected)*"])


def test_a_scenario_needing_more_devices_than_the_run_has_is_skipped(pytester, suite, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    args = suite([tiny_case("two_gpus", num_gpus=2)], {"two_gpus": GENEROUS})
    result = pytester.runpytest(*args, "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*two_gpus: needs 2 devices (num_gpus) but this run has 1 (CUDA_VISIBLE_DEVICES=7)"]
    )
    assert results(pytester)["scenarios"][0]["verdict"] == "skipped"


def test_xdist_worker_slices_and_too_few_devices(pytester, suite):
    cases = [tiny_case("two_gpus", num_gpus=2), tiny_case("two_gpus_b", num_gpus=2, seed=3)]
    args = suite(cases, {c["id"]: GENEROUS for c in cases})
    result = pytester.runpytest_subprocess(*args, "-n", "2", "--diffperf-devices=4,5,6", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        ["SKIPPED*two_gpus: needs 2 devices (num_gpus) but xdist worker gw? has 1 (CUDA_VISIBLE_DEVICES=[45])"]
    )
    result = pytester.runpytest_subprocess(*args, "-n", "3", "--diffperf-devices=0,1", "--diffperf-hardware=npu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: diffperf: -n: 3 xdist workers but 2 device(s) (ASCEND_RT_VISIBLE_DEVICES=0,1): each worker needs its own; use -n 2 or fewer"
        ]
    )


def test_works_without_xdist(pytester, suite, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    args = suite([tiny_case("two_gpus", num_gpus=2)], {"two_gpus": GENEROUS})
    result = pytester.runpytest_subprocess(*args, "-p", "no:xdist")
    result.assert_outcomes(skipped=1)


def test_a_shard_whose_server_failed_reports_errors_that_the_merge_counts(pytester, suite, capsys):
    args = two_groups(suite, num_inference_steps=3)
    cases = json.loads((pytester.path / "cases.json").read_text())
    cases["cases"][2]["frameworks"]["sglang"]["serve_args"] += " --inject-fail-startup"
    (pytester.path / "cases.json").write_text(json.dumps(cases))
    result = pytester.runpytest(*args, "--diffperf-shard=2/2", "--diffperf-startup-timeout=120")
    result.assert_outcomes(errors=1, deselected=2)
    assert not refservers()
    shard = pytester.path / "results.json"
    assert [(s["scenario"], s["verdict"]) for s in json.loads(shard.read_text())["scenarios"]] == [("b1", "error")]
    code = main(
        [
            "merge",
            str(shard),
            "-o",
            str(pytester.path / "merged.json"),
            "--expect-all",
            str(pytester.path / "baselines.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "diffperf merge: 1 file(s), 1 scenarios: 1 error" in out
    assert re.search(r"^b1\s+error\s.*server http://127\.0\.0\.1:\d+ exited with code", out, re.M), out
    assert f"2 scenario(s) of {pytester.path / 'baselines.json'} ran in no shard: a1, a2" in out
