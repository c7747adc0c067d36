"""The verdict options (A/B SPECs and budgets, inconclusive, static noise, re-measures): each mistake is one line."""

from __future__ import annotations

import json
import tempfile

import pytest

from pytest_diffperf.perf.schema import Tolerances
from pytest_diffperf.suite.verdictsettings import ab_policy, priors_line
from pytest_diffperf.verdicts.metrics import E2E_NOISE, SEQUENTIAL_NOISE
from pytest_diffperf.verdicts.noise import Noise
from pytest_diffperf.verdicts.priors import NoisePriors
from tests.support.gitrepo import commit, init, worktrees
from tests.support.suite import GENEROUS, tiny_case

MISTAKES = [
    (
        ["--diffperf-base= ; "],
        "--diffperf-base: expected 'current' or KEY=VALUE items separated by ';', got an empty SPEC",
    ),
    (["--diffperf-base=pyhton=/x"], "--diffperf-base: pyhton: unknown key 'pyhton'; expected one of python, program,"),
    (
        ["--diffperf-base=python=/no/such/python"],
        "--diffperf-base: python: '/no/such/python' is not an executable file",
    ),
    (["--diffperf-base=current", "--diffperf-candidate=args"], "--diffperf-candidate: expected KEY=VALUE, got 'args'"),
    (
        ["--diffperf-candidate=args=--x"],
        "--diffperf-candidate: a candidate SPEC needs a base: add --diffperf-base SPEC",
    ),
    (["--diffperf-base=current", "--regen-baselines"], "--diffperf-base: regeneration measures one build"),
    (
        ["--diffperf-base=current", "--diffperf-ab-request-pairs=0"],
        "--diffperf-ab-request-pairs: expected an integer >= 1, got '0'",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-max-requests=4"],
        "--diffperf-ab-max-requests: expected at least 16 requests (2 process pairs, --diffperf-ab-min-process-pairs, "
        "of 4 request pairs, --diffperf-ab-request-pairs, both sides), got 4",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-max-process-pairs=1"],
        "--diffperf-ab-max-process-pairs: expected at least --diffperf-ab-min-process-pairs (2), got 1",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-min-process-pairs=0"],
        "--diffperf-ab-min-process-pairs: expected an integer >= 1, got '0'",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-tolerance=ten"],
        "--diffperf-ab-tolerance: expected a fraction > 0 such as",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-servers=both"],
        "--diffperf-ab-servers: expected one of together, one-at-a-time, got 'both'",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-pairs=each"],
        "--diffperf-ab-pairs: expected one of group, scenario, got 'each'",
    ),
    (
        ["--diffperf-base=current", "--diffperf-ab-prestart=-1"],
        "--diffperf-ab-prestart: expected an integer >= 0 or auto, got '-1'",
    ),
    (["--diffperf-base=git=origin/main:python"], "--diffperf-base: git: {dir} is not in a git repository: git=REV"),
    (["--diffperf-base=current", "--diffperf-candidate=install"], "--diffperf-candidate: install: install= qualifies"),
    (["--diffperf-inconclusive=pass"], "--diffperf-inconclusive: expected one of report, fail, got 'pass'"),
    (["--diffperf-static-noise=maybe"], "--diffperf-static-noise: expected one of auto, on, off, got 'maybe'"),
    (["--diffperf-remeasure=none"], "--diffperf-remeasure: expected an integer >= 1, got 'none'"),
    (["--diffperf-noise=missing.json"], "missing.json: file not found"),
    (
        ["--diffperf-busy-share=150%"],
        "--diffperf-busy-share: expected a share of the machine between 0.1% and 100% (25% or 0.25), or off, got "
        "'150%'",
    ),
    (["--diffperf-busy-share=busy"], "--diffperf-busy-share: expected a fraction > 0 such as 0.1 or 10%, got 'busy'"),
    (
        ["--diffperf-quiet-wait=-5"],
        "--diffperf-quiet-wait: expected 0 or more seconds, at most 604800 (a week), got '-5'",
    ),
    (["--diffperf-busy-device=kill"], "--diffperf-busy-device: expected one of report, wait, fail, got 'kill'"),
]


@pytest.mark.parametrize(
    ("extra", "expected"), MISTAKES, ids=[m[1].split(":")[0] + f"-{i}" for i, m in enumerate(MISTAKES)]
)
def test_mistakes_are_one_line_without_traceback_and_leave_nothing(pytester, suite, extra, expected, monkeypatch):
    args = suite([tiny_case("a")], {"a": GENEROUS})
    temp = pytester.mkdir("temp")  # the run's temp folder, which other workers' runs do not touch
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    result = pytester.runpytest(*args, *extra)
    err = result.stderr.str()
    assert result.ret == 4, err
    assert expected.format(dir=pytester.path) in err, err
    assert "Traceback" not in err and err.count("ERROR: diffperf:") == 1
    assert not list(temp.glob("diffperf-*"))  # no work folder left behind


def test_a_quiet_wait_of_zero_means_do_not_wait(pytester, suite):
    result = pytester.runpytest(*suite([tiny_case("a")], {"a": GENEROUS}), "--diffperf-quiet-wait=0", "--collect-only")
    assert result.ret == 0, result.stderr.str()


def test_a_b_needs_a_profile(pytester, suite):
    args = [a for a in suite([tiny_case("a")], {"a": GENEROUS}) if not a.startswith("--diffperf=")]
    result = pytester.runpytest(*args, "--diffperf-base=current", "--regen-dry-run")
    assert result.ret == 4
    assert "--diffperf-base: A/B runs judge a profile's scenarios: add --diffperf=PROFILE" in result.stderr.str()


def test_the_header_names_both_sides(pytester, suite):
    args = suite([tiny_case("a")], {"a": GENEROUS})
    result = pytester.runpytest(
        *args, "--diffperf-base=current", "--diffperf-candidate=args=--inject-delay DenoisingStage=5", "--collect-only"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["diffperf: base=current", "diffperf: candidate=args=--inject-delay DenoisingStage=5"])


def test_git_sides_are_checked_out_named_with_their_commits_and_removed(pytester, suite):
    """The folder the tests run from is a repository: each git= side is a worktree of it for the run's length."""
    args = suite([tiny_case("a")], {"a": GENEROUS})
    init(pytester.path)
    first = commit(pytester.path, "first")
    second = commit(pytester.path, "second")
    result = pytester.runpytest(*args, "--diffperf-base=git=HEAD~1", "--diffperf-candidate=git=main", "--collect-only")
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(
        ["diffperf: base=git=HEAD~1", "diffperf: candidate=git=main", f"diffperf: base_commit={first}",
         f"diffperf: candidate_commit={second}"]
    )  # fmt: skip
    assert worktrees(pytester.path) == []

    (pytester.path / "cases.json").write_text((pytester.path / "cases.json").read_text() + "\n")  # uncommitted
    result = pytester.runpytest(*args, "--diffperf-base=git=HEAD", "--collect-only")
    result.stdout.fnmatch_lines([f"diffperf: base_commit={second}", f"diffperf: candidate_commit={second}-dirty"])

    missing = pytester.runpytest(*args, "--diffperf-base=git=origin/main:python")
    assert missing.ret == 4 and "Traceback" not in missing.stderr.str()
    missing.stderr.fnmatch_lines(
        [f"ERROR: diffperf: --diffperf-base: git: revision 'origin/main' does not exist in {pytester.path} (fetch*"]
    )
    assert worktrees(pytester.path) == []


def test_a_b_tolerances_are_the_profiles_unless_given():
    profile = Tolerances(
        e2e=0.25, denoise_stage=0.3, non_denoise_stage=0.8, denoise_step=0.3, denoise_agg=0.2, load=0.5
    )
    policy = ab_policy(profile, None)
    assert (policy.e2e.tolerance, policy.denoising_stage.tolerance, policy.denoise_agg.tolerance) == (0.25, 0.3, 0.2)
    assert (policy.stage.tolerance, policy.load.tolerance) == (0.8, 0.5)
    assert policy.e2e.gated and policy.denoising_stage.gated and not policy.stage.gated
    given = ab_policy(profile, 0.1)
    assert (given.e2e.tolerance, given.denoising_stage.tolerance, given.denoise_agg.tolerance) == (0.1, 0.1, 0.1)
    assert given.stage.tolerance == 0.8
    assert policy.e2e.noise == E2E_NOISE
    sequential = ab_policy(profile, None, None, "one-at-a-time")
    assert sequential.e2e.noise == SEQUENTIAL_NOISE and sequential.e2e.tolerance == 0.25
    calibrated = ab_policy(
        profile, None, NoisePriors.model_validate({"ab": {"e2e": {"between": 0.01, "within": 0.02}}}), "one-at-a-time"
    )
    assert calibrated.e2e.noise == Noise(0.01, 0.02)  # the calibration file's priors win over the mode's
    assert calibrated.denoising_stage.noise == SEQUENTIAL_NOISE


def test_the_header_names_the_noise_priors_in_force(pytester, suite):
    """Issue 39: built in for the reference server on cpu, or the calibration file with its runner class and date."""
    args = suite([tiny_case("a")], {"a": GENEROUS})
    built_in = pytester.runpytest(*args, "--collect-only")
    built_in.stdout.fnmatch_lines(["diffperf: noise priors: built in (the reference server on cpu)"])
    calibration = {"runner_class": "gpu-pool", "created": "2026-12-05T18:00:00+00:00"}
    (pytester.path / "noise.json").write_text(
        json.dumps({"ab": {"e2e": {"between": 0.01, "within": 0.02}}, "calibration": calibration})
    )
    (pytester.path / "hand.json").write_text(json.dumps({"ab": {"e2e": {"between": 0.01, "within": 0.02}}}))
    given = pytester.runpytest(*args, "--diffperf-noise=noise.json", "--collect-only")
    given.stdout.fnmatch_lines(["diffperf: noise priors: *noise.json (runner class gpu-pool, calibrated 2026-12-05)"])
    by_hand = pytester.runpytest(*args, "--diffperf-noise=hand.json", "--collect-only")
    by_hand.stdout.fnmatch_lines(["diffperf: noise priors: *hand.json (written by hand: no calibration block)"])


@pytest.mark.parametrize(("launcher", "hardware"), [("sglang", "cpu"), ("reference", "h100"), ("sglang", None)])
def test_a_platform_without_calibration_says_so_with_the_command(launcher, hardware):
    line = priors_line(None, None, launcher, hardware)
    assert line == (
        f"diffperf: note: no noise calibration for {launcher} on {hardware or 'this platform'} (the built-in priors are "
        "the reference server's on cpu): diffperf calibrate --ab AA.json --history DIR -o noise.json, then "
        "--diffperf-noise noise.json"
    )
