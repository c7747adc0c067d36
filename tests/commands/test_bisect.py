"""`diffperf bisect`: its mistakes (one line each, before any step) and a step's verdict from its results file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_diffperf.bisect.step import Sides, judge_step, metric_name
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.results.model import ABMetricRecord, ABRecord, AttributionRecord, ScenarioResult, StageShareRecord
from tests.support.cli import diffperf
from tests.support.gitrepo import commit, git, init


@pytest.fixture
def repo(tmp_path):
    repo = init(tmp_path / "repo")
    for n in range(3):
        (repo / "notes.txt").write_text(f"{n}\n")
        commit(repo, f"commit {n}")
    return repo


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--good", "nope", "--bad", "HEAD"], "--good: revision 'nope' does not exist in {repo}"),
        (["--good", "HEAD", "--bad", "HEAD~2"], "--bad: HEAD ({head}) is not an ancestor of HEAD~2 ({first})"),
        (["--good", "HEAD", "--bad", "HEAD"], "--bad: HEAD ({head}) is not an ancestor of HEAD ({head})"),
        (
            ["--good", "HEAD~1", "--bad", "HEAD", "--metric", " "],
            "--metric: expected e2e or a stage's name (DenoisingStage), got nothing",
        ),
        (["--good", "HEAD~1", "--bad", "HEAD", "--repo", "{tmp}"], "--repo: {tmp} is not in a git repository"),
        (
            ["--good", "HEAD~1", "--bad", "HEAD", "--subdir", "python/"],
            "--subdir: --good {second} of {repo} has no 'python'",
        ),
    ],
)
def test_mistakes_are_one_line_before_any_step(repo, tmp_path, args, expected):
    head, first = git(repo, "rev-parse", "HEAD")[:12], git(repo, "rev-parse", "HEAD~2")[:12]
    fill = {
        "repo": repo,
        "head": head,
        "first": first,
        "tmp": tmp_path,
        "second": git(repo, "rev-parse", "HEAD~1")[:12],
    }
    result = diffperf("bisect", *(a.format(**fill) for a in args), "--", "--diffperf=pr_test", cwd=repo)
    assert result.returncode == 2
    assert result.stderr == f"diffperf bisect: error: {expected.format(**fill)}\n"
    assert not (repo / "diffperf-bisect.json").exists() and not (repo / "diffperf-bisect-steps").exists()


def test_each_side_is_the_commit_with_the_same_items():
    sides = Sides(Path("/r"), "python", None, Path("/c"))
    assert sides.spec("abc") == "git=abc:python; repo=/r; cache=/c"
    assert Sides(Path("/r"), install="").spec("abc") == "git=abc; repo=/r; install"
    assert Sides(Path("/r"), install="--no-deps").spec("abc") == "git=abc; repo=/r; install=--no-deps"


def test_metric_names_a_stage_or_e2e():
    assert (metric_name(None), metric_name("e2e"), metric_name("DenoisingStage")) == (
        None, "e2e", "stage[DenoisingStage]"
    )  # fmt: skip
    assert metric_name("stage[DecodingStage]") == "stage[DecodingStage]"


def metric(name: str, verdict: str, ratio: float) -> ABMetricRecord:
    return ABMetricRecord(name=name, gated=True, tolerance=0.1, ratio=ratio, low=ratio - 0.1, high=ratio + 0.1,
                          verdict=verdict, base_ms=100, candidate_ms=100 * ratio, process_pairs=2,
                          request_pairs=8)  # fmt: skip


def scenario(name: str, verdict: str, ratio: float, stage_verdict: str = "unchanged") -> dict:
    shares = [StageShareRecord(stage="DenoisingStage", ratio=ratio, low=1, high=2, delta_ms=50, share=0.93, named=True)]
    record = ABRecord(
        verdict=verdict, headline=f"{verdict}: e2e", base="b", candidate="c", process_pairs=2, requests=16,
        wall_s=30, stop="decisive",
        metrics=[metric("e2e", verdict, ratio), metric("stage[DenoisingStage]", stage_verdict, ratio)],
        attribution=AttributionRecord(ratio=ratio, low=1, high=2, delta_ms=50, named=["DenoisingStage"], stages=shares),
    )  # fmt: skip
    result = ScenarioResult(scenario=name, verdict="fail" if verdict == "regressed" else "pass", ab=record)
    return json.loads(result.model_dump_json())


def judged(*scenarios: dict, metric: str | None = None):
    return judge_step({"scenarios": list(scenarios)}, metric, 12.0, Path("r.json"), Path("r.log"))


def test_a_step_is_regressed_when_a_scenario_is_and_names_its_interval_and_stage():
    step = judged(scenario("a", "unchanged", 1.01), scenario("b", "regressed", 1.5), scenario("c", "inconclusive", 1.2))
    assert (step.verdict, step.scenario, step.requests, step.process_pairs) == ("regressed", "b", 48, 2)
    assert step.interval() == "e2e +50.0 % [+40.0, +60.0]"
    assert step.explained_by() == "DenoisingStage explains 93 %"
    assert judged(scenario("a", "unchanged", 1.0), scenario("c", "inconclusive", 1.2)).verdict == "inconclusive"
    assert judged(scenario("a", "unchanged", 1.0), scenario("b", "improved", 0.8)).verdict == "unchanged"
    assert judged(scenario("b", "improved", 0.8)).verdict == "improved"


def test_a_step_judged_by_one_metric():
    step = judged(scenario("a", "regressed", 1.3, stage_verdict="unchanged"), metric="stage[DenoisingStage]")
    assert step.verdict == "unchanged" and step.interval().startswith("DenoisingStage +30.0 % [")
    with pytest.raises(DiffperfError, match=r"--metric: a has no metric 'stage\[Missing\]'; it has e2e, Denoising"):
        judged(scenario("a", "regressed", 1.3), metric="stage[Missing]")
    with pytest.raises(DiffperfError, match="no scenario was judged A/B"):
        judge_step({"scenarios": []}, None, 1.0, Path("r.json"), Path("r.log"))


def test_only_a_command_with_a_passthrough_takes_arguments_after_dashes():
    result = diffperf("lint", "baselines.json", "--", "-k", "x")
    assert result.returncode == 2
    assert "diffperf lint: error: takes no arguments after '--' (got -k x)" in result.stderr
