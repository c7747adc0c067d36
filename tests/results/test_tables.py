"""The summary table: the judged e2e, its Δ, the limiting check (time first, memory only when it fails or is
closest), A/B and noise intervals, the reason of every scenario that did not pass; one vocabulary."""

from __future__ import annotations

from pytest_diffperf.results.model import (
    OUTCOMES,
    ABMetricRecord,
    ABRecord,
    NoiseRecord,
    NoisyCheckRecord,
    ScenarioResult,
)
from pytest_diffperf.results.tables import SUMMARY_HEADER, failing_checks, limiting, reason, summary_table
from tests.support.reports import check, results


def test_summary_rows(tmp_path):
    table = summary_table(results(tmp_path / "none.png"))
    assert table[0] == list(SUMMARY_HEADER)
    rows = {row[0]: row for row in table[1:]}
    assert rows["fast"] == ["fast", "pass", "500.00", "510.00", "-2.0%", "e2e -2.0% (allowed +37.3%)", ""]
    assert rows["slow"][1:6] == [
        "fail",
        "1400.00",
        "1000.00",
        "+40.0%",
        "stage[DenoisingStage] +50.0% (allowed +10.0%)",
    ]
    assert rows["slow"][6] == (
        "2 check(s) over: e2e +40.0% > +10.0%, stage[DenoisingStage] +50.0% > +10.0%; output: slow: frame 0 ssim 0.41 < 0.95"
    )
    assert rows["noisy"][1] == "inconclusive"
    assert rows["noisy"][5] == "e2e +9.0% (allowed +10.0%) [+4.0%, +15.0%] of 3 process(es)"
    assert rows["noisy"][6].startswith("PERFORMANCE: inconclusive (3 fresh server(s), 9 requests)")
    assert rows["ab"][1:6] == ["fail", "1120.00", "1000.00", "+12.0%", "A/B e2e +12.0% [+8.0%, +16.0%] regressed"]
    assert rows["broken"][1:] == ["error", "-", "-", "-", "-", "server http://x exited with code 1"]
    assert {row[1] for row in table[1:]} <= set(OUTCOMES)


def limiting_name(result: ScenarioResult) -> str:
    found = limiting(result)
    assert found is not None, result
    return found.name


def test_memory_limits_only_when_it_fails_or_is_closest():
    time_first = ScenarioResult(scenario="a", verdict="pass", checks=[
        check("e2e", "e2e", 1050.0, 1000.0, 1100.0), check("mem", "vram", 1020.0, 1000.0, 1100.0)])  # fmt: skip
    assert limiting_name(time_first) == "e2e"
    closer = ScenarioResult(scenario="a", verdict="pass", checks=[
        check("e2e", "e2e", 1000.0, 1000.0, 1100.0), check("mem", "vram", 1090.0, 1000.0, 1100.0)])  # fmt: skip
    assert limiting_name(closer) == "mem"
    tie = ScenarioResult(scenario="a", verdict="pass", checks=[
        check("mem", "vram", 1050.0, 1000.0, 1100.0), check("e2e", "e2e", 1050.0, 1000.0, 1100.0)])  # fmt: skip
    assert limiting_name(tie) == "e2e"


def test_an_ab_row_shows_the_verdicts_estimate_and_the_metric_that_decided_it():
    """The trial's wan_tiny_i2v: medians 3080 -> 4166 ms, e2e's paired estimate +3.4 % inconclusive, the scenario
    regressed through DenoisingStage: Δ is e2e's estimate, the cell names DenoisingStage with its verdict."""
    e2e = ABMetricRecord(name="e2e", gated=True, tolerance=0.1, ratio=1.034, low=0.864, high=1.239,
                         verdict="inconclusive", base_ms=3080.41, candidate_ms=4166.32, process_pairs=2,
                         request_pairs=8)  # fmt: skip
    stage = e2e.model_copy(update={"name": "stage[DenoisingStage]", "ratio": 2.902, "low": 2.4, "high": 3.5,
                                   "verdict": "regressed", "base_ms": 150.0, "candidate_ms": 435.0})  # fmt: skip
    load = e2e.model_copy(update={"name": "load", "gated": False, "ratio": 1.0, "verdict": "unchanged"})
    record = ABRecord(verdict="regressed", headline="regressed: ...", base="current", candidate="args=...",
                      process_pairs=2, requests=16, wall_s=60.0, stop="decisive", metrics=[load, e2e, stage])  # fmt: skip
    row = summary_table([ScenarioResult(scenario="wan", verdict="fail", ab=record)])[1]
    assert row[1:6] == [
        "fail",
        "3185.14",  # the base's median x the paired estimate: the row shows one estimate, not the pooled 4166.32
        "3080.41",
        "+3.4%",
        "A/B DenoisingStage +190.2% [+140.0%, +250.0%] regressed",
    ]
    unsure = record.model_copy(update={"verdict": "inconclusive", "metrics": [e2e, stage.model_copy(
        update={"verdict": "unchanged", "ratio": 1.01})]})  # fmt: skip
    row = summary_table([ScenarioResult(scenario="wan", verdict="inconclusive", ab=unsure)])[1]
    assert row[5] == "A/B e2e +3.4% [-13.6%, +23.9%] inconclusive"


def test_an_ab_rows_figures_and_change_are_one_estimate():
    """The trial's A/A flux_tiny_t2i: pooled medians 430.31 (candidate) against 431.52 (base) were shown with the
    paired estimate's +0.3 %, the sign wrong to the eye; the row's figures now give the change it shows."""
    e2e = ABMetricRecord(name="e2e", gated=True, tolerance=0.1, ratio=1.003, low=0.9, high=1.1,
                         verdict="inconclusive", base_ms=431.52, candidate_ms=430.31, process_pairs=10,
                         request_pairs=40)  # fmt: skip
    record = ABRecord(verdict="inconclusive", headline="inconclusive: ...", base="current", candidate="current",
                      process_pairs=10, requests=80, wall_s=60.0, stop="budget", metrics=[e2e])  # fmt: skip
    row = summary_table([ScenarioResult(scenario="flux", verdict="inconclusive", ab=record)])[1]
    assert row[2:5] == ["432.81", "431.52", "+0.3%"]
    assert f"{float(row[2]) / float(row[3]) - 1:+.1%}" == row[4]


def noisy_check(name: str, actual: float, low: float, high: float, expected: float, limit: float, verdict: str):
    return NoisyCheckRecord(name=name, actual=actual, low=low, high=high, expected=expected, limit=limit,
                            verdict=verdict, processes=1, requests=3)  # fmt: skip


def test_the_limiting_check_of_an_inconclusive_scenario_is_an_inconclusive_one():
    """The trial's scenario 42 % faster than its baseline: its limiting check was a passing stage 'allowed
    +16216.2 %'; it is the check whose interval straddles its limit, and --tb=line's count is the judged one."""
    checks = [
        check("e2e", "e2e", 580.0, 1000.0, 1100.0),
        check("stage[TimestepPreparationStage]", "stage", 1.2, 1.0, 163.2),
        check("stage[DenoisingStage]", "stage", 350.0, 300.0, 330.0, "fail"),  # the engine: over its limit
    ]
    noise = NoiseRecord(verdict="inconclusive", attempts=1, requests=3, wall_s=9.0, checks=[
        noisy_check("e2e", 580.0, 500.0, 700.0, 1000.0, 1100.0, "pass"),
        noisy_check("stage[TimestepPreparationStage]", 1.2, 1.0, 1.5, 1.0, 163.2, "pass"),
        noisy_check("stage[DenoisingStage]", 350.0, 250.0, 480.0, 300.0, 330.0, "inconclusive"),
    ])  # fmt: skip
    result = ScenarioResult(scenario="fast", verdict="inconclusive", checks=checks, noise=noise,
                            message="PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): the run's noise "
                                    "supports neither a pass nor a fail at these limits")  # fmt: skip
    assert limiting_name(result) == "stage[DenoisingStage]"
    assert failing_checks(result) == []  # the engine's "fail" was replaced by the interval's verdict
    assert summary_table([result])[1][5] == (
        "stage[DenoisingStage] +16.7% (allowed +10.0%) [-16.7%, +60.0%] of 1 process(es)"
    )


def test_a_reason_is_whole_and_the_terminals_cut_falls_between_words():
    text = "PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): the run's noise supports neither a pass nor " \
           "a fail at these limits"  # fmt: skip
    result = ScenarioResult(scenario="x", verdict="inconclusive", message=text + "\n  e2e: inconclusive: ...")
    assert reason(result) == text
    assert summary_table([result])[1][6] == text
    cut = summary_table([result], reason_width=60)[1][6]
    assert cut == "PERFORMANCE: inconclusive (1 fresh server(s), 3 … (below)"
    assert len(cut) <= 60 and text.startswith(cut.removesuffix(" … (below)"))


def test_an_output_mismatch_names_its_metrics_values_and_frames_first():
    consistency = {
        "status": "fail",
        "message": "CONSISTENCY: case v (1 GPU) differs from its ground truth: ssim on frame mid",
        "thresholds": {"clip": 0.9, "ssim": 0.95, "psnr": 25.0, "mad": 0.05},
        "frames": [
            {"index": 0, "label": "0", "clip": 0.99, "ssim": 0.99, "psnr": 40.0, "mad": 0.0, "failed": []},
            {"index": 3, "label": "mid", "clip": 0.99, "ssim": 0.41, "psnr": 20.5, "mad": 0.01,
             "failed": ["ssim", "psnr"]},
        ],
    }  # fmt: skip
    result = ScenarioResult(scenario="v", verdict="inconclusive", consistency=consistency,
                            message="PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): ...")  # fmt: skip
    assert result.outcome == "fail"
    assert reason(result) == (
        "output: ssim 0.4100 (needs >= 0.95) on frame mid (index 3), psnr 20.5000 (needs >= 25) on frame mid "
        "(index 3); PERFORMANCE: inconclusive (1 fresh server(s), 3 requests): ..."
    )


def test_a_check_judged_by_point_value_says_so():
    """Its limit within the noise: the interval is against the expected value, and the point value decided."""
    checks = [check("e2e", "e2e", 105.0, 100.0, 110.0)]
    judged = noisy_check("e2e", 105.0, 60.0, 180.0, 100.0, 110.0, "pass").model_copy(
        update={"judged_by": "point value"}
    )
    noise = NoiseRecord(verdict="pass", attempts=1, requests=3, wall_s=9.0, checks=[judged])
    result = ScenarioResult(scenario="p", verdict="pass", checks=checks, noise=noise)
    assert (
        summary_table([result])[1][5] == "e2e +5.0% (allowed +10.0%) [-40.0%, +80.0%] of 1 process(es), by point value"
    )
