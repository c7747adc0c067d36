"""A failure's one line (--tb=line, the short test summary, JUnit's message): the verdict first, as many checks as
it counts, an output's metric and frame."""

from __future__ import annotations

from pytest_diffperf.results.model import NoiseRecord, NoisyCheckRecord, ScenarioResult
from pytest_diffperf.suite.failure import headline
from tests.support.reports import check, results


def test_the_count_is_of_the_checks_it_lists():
    """The limit formula failed e2e and DenoisingStage, the run's noise passed DenoisingStage: one check failed."""
    noisy = [
        NoisyCheckRecord(name="e2e", actual=1400.0, low=1300.0, high=1500.0, expected=1000.0, limit=1100.0,
                         verdict="fail", processes=3, requests=9),
        NoisyCheckRecord(name="stage[DenoisingStage]", actual=900.0, low=700.0, high=1000.0, expected=800.0,
                         limit=880.0, verdict="inconclusive", processes=3, requests=9),
    ]  # fmt: skip
    result = ScenarioResult(
        scenario="slow",
        verdict="fail",
        checks=[
            check("e2e", "e2e", 1400.0, 1000.0, 1100.0, "fail"),
            check("stage[DenoisingStage]", "stage", 900.0, 800.0, 880.0, "fail"),
        ],
        noise=NoiseRecord(verdict="fail", attempts=3, requests=9, wall_s=30.0, checks=noisy),
    )
    body = "PERFORMANCE: 1 check(s) failed (3 fresh server(s), 9 requests)\ncheck actual ..."
    assert headline(body, result) == "1 check(s) failed: e2e 1400.00 ms +40.0% (limit 1100.00, +10.0%)"


def test_an_ab_failure_starts_with_its_verdict(tmp_path):
    ab = next(r for r in results(tmp_path / "x.png") if r.scenario == "ab")
    line = headline(ab.message, ab)
    assert line == "regressed: e2e +12.0 % [+8.0, +16.0], 40 s (A/B against the base: current)"
    assert line[: 80 - len("FAILED baselines.json::ab - ")].startswith("regressed: e2e +12.0 %")


def test_an_output_mismatch_names_the_metric_its_value_and_the_frame():
    message = "CONSISTENCY: case v (1 GPU) differs from its ground truth: ssim on frame mid"
    consistency = {"status": "fail", "message": message, "thresholds": {"ssim": 0.95},
                   "frames": [{"index": 2, "label": "mid", "ssim": 0.41, "failed": ["ssim"]}]}  # fmt: skip
    result = ScenarioResult(scenario="v", verdict="pass", consistency=consistency)
    assert headline(message + "\n  thresholds: ...", result) == (
        "output differs from its ground truth: ssim 0.4100 (needs >= 0.95) on frame mid (index 2)"
    )
