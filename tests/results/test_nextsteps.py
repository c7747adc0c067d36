"""The run-wide next: lines: an inconclusive verdict's ways out, an output's ground truth, wrapped between words."""

from __future__ import annotations

from pytest_diffperf.results.nextsteps import RunContext, ground_truth_next, inconclusive_next, wrapped


def test_an_inconclusive_static_verdict_names_each_way_out_with_this_runs_files():
    run = RunContext.of({"baselines": ["data/perf_baselines/cpu.json"]}, "out/results.json")
    assert inconclusive_next(["flux_tiny_t2i"], run) == [
        ("record this machine when it is quiet", "diffperf accept out/results.json (or pytest --regen-baselines "
                                "--diffperf-baselines=data/perf_baselines/cpu.json -k flux_tiny_t2i)"),
        ("run A/B", "--diffperf-base=current (or python=BASE-VENV/bin/python: the base build)"),
        ("more requests or servers", "perf_repeat_requests in the case, --diffperf-remeasure=5"),
        ("calibrate the noise", "diffperf calibrate --ab AA.json --history DIR -o noise.json, then --diffperf-noise=noise.json (docs/verdicts.md)"),
    ]  # fmt: skip
    several = inconclusive_next(["a", "b"], RunContext.of({"baselines": ["b.json"]}))
    assert several[0] == (
        "record this machine when it is quiet",
        "pytest --regen-baselines --diffperf-baselines=b.json",
    )
    assert inconclusive_next([], run) == []


def test_an_inconclusive_ab_verdict_asks_for_more_process_pairs_or_calibrated_noise():
    run = RunContext.of({"baselines": ["b.json"], "base": "current"})
    assert [what for what, _ in inconclusive_next(["x"], run)] == ["more process pairs", "calibrate the noise"]


def test_the_ground_truth_command_keeps_the_runs_folder():
    assert ground_truth_next("wan", RunContext()) == "pytest --regen-ground-truth -k wan"
    assert (
        ground_truth_next("wan", RunContext(gt_dir="/gt")) == "pytest --regen-ground-truth --diffperf-gt-dir=/gt -k wan"
    )
    repeated = ["--diffperf-gt-dir=gt", "--diffperf-baselines=b.json"]
    assert ground_truth_next("wan", RunContext(gt_dir="gt"), repeated, ["b.json::wan"]) == (
        "pytest --regen-ground-truth --diffperf-gt-dir=gt --diffperf-baselines=b.json b.json::wan"
    )


def test_wrapped_lines_break_between_words_and_never_inside_a_path():
    path = "/a/very/long/path/that/does/not/fit/in/thirty/columns/results.json"
    lines = wrapped([f"  next: diffperf accept {path} now"], 30)
    assert lines[0] == "  next: diffperf accept"
    assert lines[1] == f"      {path}"
    assert lines[2] == "      now"
