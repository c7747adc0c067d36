"""Static mode: the limit formula with the run's noise, pass / fail / inconclusive, and the re-measure rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.perf.limits import Check, JudgeRules, get_preset, limit, plan_checks
from pytest_diffperf.perf.schema import ScenarioBaseline, Tolerances
from pytest_diffperf.verdicts.rules import z_value
from pytest_diffperf.verdicts.static import (
    StaticNoise,
    StaticPolicy,
    forecast,
    forecast_se,
    go_on,
    judge_static,
    judge_static_checks,
    remeasure,
    scenario_verdict,
    within_noise,
)
from pytest_diffperf.verdicts.vocab import STATIC_VERDICTS

NOISE = StaticNoise(baseline=0.1, process=0.1, within=0.1, process_weight=8, within_weight=20)
PR_TEST = Tolerances(e2e=0.25, denoise_stage=0.25, non_denoise_stage=0.8, denoise_step=0.3, denoise_agg=0.2)


def e2e_check(expected: float = 100.0, rel: float = 0.25, pad: float = 20.0) -> Check:
    return Check("e2e", "e2e", expected, rel, pad, limit(expected, rel, pad), "expected_e2e_ms")


def se_one_process(n: int) -> float:
    """The interval's se for one process of n identical requests under NOISE."""
    within2 = 20 * 0.1**2 / (20 + n - 1)
    return math.sqrt(0.1**2 + math.pi / 2 * within2 / n + 0.1**2)


def test_hand_checked_fail_and_inconclusive():
    """3x the baseline against +85 %: log 3 - z * se above log 1.85 fails at z = 3, not at z = 3.5."""
    se = se_one_process(10)
    assert math.log(3) - 3 * se > math.log(1.85) > math.log(3) - 3.5 * se
    check = e2e_check(rel=0.85)  # limit 185 ms: outside the noise, judged by its interval
    result = judge_static(check, [[300.0] * 10], NOISE, 3.0)
    assert (result.verdict, result.point) == ("fail", False)
    assert result.low == pytest.approx(100 * math.exp(math.log(3) - 3 * se))
    assert result.high == pytest.approx(100 * math.exp(math.log(3) + 3 * se))
    assert (result.actual, result.processes, result.requests, result.z) == (300.0, 1, 10, 3.0)
    assert judge_static(check, [[300.0] * 10], NOISE, 3.5).verdict == "inconclusive"
    assert result.text().startswith("e2e: fail: 300.00 ms [")


def test_a_limit_within_the_noise_is_judged_by_point_value():
    """+25 % lies within one process's noise (z * se = 3.5 * 0.145 = 0.51 > log 1.25 = 0.22): the interval could
    never pass no change, so the point value decides; a fail also needs the interval above the expected value."""
    check = e2e_check()  # limit 125 ms
    assert 3.5 * se_one_process(10) > math.log(1.25)
    same = judge_static(check, [[100.0] * 10], NOISE, 3.5)
    assert (same.verdict, same.point) == ("pass", True)
    assert same.text().startswith("e2e: pass by point value: 100.00 ms <= limit 125.00 ms, interval [")
    assert "the limit lies within the noise fresh servers cannot remove" in same.text()
    slower = judge_static(check, [[130.0] * 10], NOISE, 3.5)  # past the limit, but not past the noise
    assert (slower.verdict, slower.point) == ("inconclusive", True)
    assert slower.low < check.expected
    assert "inconclusive by point value: 130.00 ms > limit 125.00 ms" in slower.text()
    double = judge_static(check, [[200.0] * 10], NOISE, 3.5)  # log 2 - 0.51 > 0: slower than the stored value
    assert (double.verdict, double.point) == ("fail", True)
    assert double.low > check.expected


def test_within_noise_is_the_forecast_at_no_change():
    """A limit lies within the noise when the budget's attempts could not bring no change's interval below it."""
    noise = StaticPolicy().e2e
    se3 = math.sqrt(noise.baseline**2 + (noise.process**2 + math.pi / 2 * noise.within**2 / 3) / 3)
    assert float(forecast_se(noise, np.array(3.0), 3)) == pytest.approx(se3)
    assert bool(within_noise(np.array(3.0 * se3 - 1e-9), noise, 3.0, np.array(3.0), 3))
    assert not bool(within_noise(np.array(3.0 * se3 + 1e-9), noise, 3.0, np.array(3.0), 3))
    assert bool(within_noise(np.array(3.0 * se3 + 1e-9), noise, 3.0, np.array(3.0), 2))  # fewer attempts, more noise
    load = StaticPolicy().load  # one sample per process, nothing within: 0.14 each
    assert float(forecast_se(load, np.array(1.0), 3)) == pytest.approx(math.sqrt(0.14**2 + 0.14**2 / 3))


def test_the_limit_is_the_engines_formula():
    """The pad wins over the relative tolerance on a small baseline: 10 ms + 20 ms pad, outside the noise."""
    check = e2e_check(expected=10.0)
    assert check.limit == 30.0
    result = judge_static(check, [[10.0] * 10], NOISE, 3.0)
    assert (result.verdict, result.point) == ("pass", False)  # log 3 is beyond 3 * se


def test_re_measures_pool_and_tighten():
    one = judge_static(e2e_check(rel=0.85), [[300.0] * 10], NOISE, 3.5)
    three = judge_static(e2e_check(rel=0.85), [[300.0] * 10, [290.0] * 10, [310.0] * 10], NOISE, 3.5)
    assert one.verdict == "inconclusive"
    assert three.verdict == "fail"
    assert three.processes == 3
    assert three.requests == 30
    assert (three.high - three.low) < (one.high - one.low)


def test_invalid_samples_are_skipped_and_none_is_an_error():
    result = judge_static(e2e_check(), [[200.0, math.nan, -1.0] + [200.0] * 8], NOISE, 3.0)
    assert result.requests == 9
    with pytest.raises(ValueError, match="e2e: no valid samples"):
        judge_static(e2e_check(), [[math.nan]], NOISE, 3.0)
    with pytest.raises(ValueError, match="only timing checks with an expected value > 0"):
        judge_static(e2e_check(expected=0.0), [[1.0]], NOISE, 3.0)


def scenario_and_checks() -> list[Check]:
    scenario = ScenarioBaseline(
        stages_ms={"TextEncodingStage": 9.0, "DenoisingStage": 280.0, "DecodingStage": 100.0},
        denoise_step_ms={str(i): 17.5 for i in range(16)},
        expected_e2e_ms=400.0,
        expected_avg_denoise_ms=17.5,
        expected_median_denoise_ms=17.5,
        runtime_peak_vram_mb=1000.0,
    )
    rules = JudgeRules(PR_TEST, get_preset("sglang"), (0.0, 0.2, 0.4, 0.6, 0.8, 1.0))
    return plan_checks(scenario, rules, is_video=False, num_frames=None)


def samples(factor: float, processes: int = 1) -> dict[str, list[list[float]]]:
    rng = np.random.default_rng(0)
    out: dict[str, list[list[float]]] = {}
    for check in scenario_and_checks():
        out[check.name] = [list(check.expected * factor * rng.lognormal(0, 0.05, size=10)) for _ in range(processes)]
    return out


def test_scenario_with_the_engines_checks():
    checks = scenario_and_checks()
    policy = StaticPolicy()
    results = judge_static_checks(checks, samples(3.0), policy)
    timing = [c for c in checks if c.unit == "ms"]
    assert [r.check.name for r in results] == [c.name for c in timing]  # memory checks stay deterministic
    assert scenario_verdict(results) == "fail"
    same = judge_static_checks(checks, samples(1.0), policy)
    assert scenario_verdict(same) == "pass"
    assert {r.check.name for r in same if r.point} >= {"e2e", "stage[DenoisingStage]"}  # +25 % within the noise
    loose = StaticPolicy(
        e2e=StaticNoise(0.01, 0.01, 0.05), denoise=StaticNoise(0.01, 0.01, 0.05), stage=StaticNoise(0.01, 0.01, 0.05)
    )
    by_interval = judge_static_checks(checks, samples(1.0), loose)
    assert scenario_verdict(by_interval) == "pass"
    assert not any(r.point for r in by_interval)
    assert results[0].text().startswith("e2e: fail by point value: ")
    assert "> limit 500.00 ms" in results[0].text()


def test_checks_without_samples_or_baseline_are_left_to_the_engine():
    checks = scenario_and_checks()
    partial = {"e2e": [[400.0] * 10]}
    assert [r.check.name for r in judge_static_checks(checks, partial)] == ["e2e"]
    assert scenario_verdict([]) == "inconclusive"


def test_z_splits_alpha_half_to_e2e_the_rest_evenly_and_over_attempts():
    policy = StaticPolicy(alpha=0.01, max_attempts=3)
    assert policy.z(14, e2e=True) == pytest.approx(z_value(0.01 * 0.5 / 3))  # 2.935
    assert policy.z(14) == pytest.approx(z_value(0.01 * 0.5 / 13 / 3))  # 3.66
    assert policy.z(14, e2e=True) == pytest.approx(2.935, abs=1e-3)
    assert policy.z(1) == policy.z(1, e2e=True) == pytest.approx(z_value(0.01 / 3))
    shares = [0.5] + [0.5 / 13] * 13  # Bonferroni: the shares sum to alpha, whatever the checks' correlation
    assert sum(shares) == pytest.approx(1.0)


def test_noise_by_check_kind():
    policy = StaticPolicy()
    by_name = {c.name: policy.noise(c) for c in scenario_and_checks() if c.unit == "ms"}
    assert by_name["e2e"] is policy.e2e
    assert by_name["stage[DenoisingStage]"] is policy.denoise
    assert by_name["step[3]"] is policy.denoise
    assert by_name["stage[DecodingStage]"] is policy.stage
    vram = next(c for c in scenario_and_checks() if c.unit == "MiB")
    with pytest.raises(ValueError, match="deterministic"):
        policy.noise(vram)


def test_remeasure_rule():
    """Fails are re-measured; an inconclusive check only while the remaining attempts could decide it."""
    policy = StaticPolicy(max_attempts=3)
    wide = e2e_check(rel=1.0)  # limit 200 ms, outside the noise of 3 attempts (z 2.71 * se 0.13 = 0.35 < log 2)
    far_above = judge_static_checks([wide], {"e2e": [[300.0] * 3]}, policy)  # forecast above the limit at 3 attempts
    assert (far_above[0].verdict, far_above[0].point) == ("inconclusive", False)
    assert remeasure(far_above, 1, policy)
    assert not remeasure(far_above, 3, policy)  # the budget is spent
    near = judge_static_checks([wide], {"e2e": [[250.0] * 3]}, policy)  # near the limit: 3 attempts cannot decide
    assert near[0].verdict == "inconclusive"
    assert not remeasure(near, 1, policy)
    failing = judge_static_checks([wide], {"e2e": [[900.0] * 3]}, policy)
    assert failing[0].verdict == "fail"
    assert remeasure(failing, 1, policy)
    passing = judge_static_checks([e2e_check(rel=4.0)], {"e2e": [[100.0] * 3]}, policy)
    assert passing[0].verdict == "pass"
    assert not remeasure(passing, 1, policy)
    with pytest.raises(ValueError, match="at least one attempt"):
        remeasure(failing, 0, policy)


def test_remeasure_rule_by_point_value():
    """A limit within the noise (+25 %): no change passes at once; a point value past the limit is measured again,
    to confirm it (a fail) or bring it back (a pass), as a failing check is."""
    policy = StaticPolicy(max_attempts=3)
    same = judge_static_checks([e2e_check()], {"e2e": [[100.0] * 3]}, policy)
    assert (same[0].verdict, same[0].point) == ("pass", True)
    assert not remeasure(same, 1, policy)
    barely = judge_static_checks([e2e_check()], {"e2e": [[128.0] * 3]}, policy)  # past the limit, not the noise
    assert (barely[0].verdict, barely[0].point) == ("inconclusive", True)
    assert remeasure(barely, 1, policy)
    assert not remeasure(barely, 3, policy)  # the budget is spent
    double = judge_static_checks([e2e_check()], {"e2e": [[200.0] * 3]}, policy)
    assert double[0].verdict == "fail"
    assert remeasure(double, 1, policy)


def test_forecast_at_the_last_attempt():
    """3 attempts of 3 requests shrink se to the baseline's part and a third of the rest; a check whose limit lies
    within that noise is forecast by its point value alone."""
    noise = StaticPolicy().e2e
    z = 3.0
    se3 = float(forecast_se(noise, np.array(3.0), 3))

    def code(est: float, edge: float) -> str:
        low, high = np.array(est - 1.0), np.array(est + 1.0)
        return STATIC_VERDICTS[int(forecast(low, high, np.array(edge), noise, z, np.array(3.0), 3))]

    assert z * se3 < math.log(3) - z * se3  # by interval
    assert code(math.log(3), math.log(3) - z * se3 - 0.01) == "fail"
    assert code(math.log(3), math.log(3) - z * se3 + 0.01) == "inconclusive"
    assert code(math.log(3), math.log(3) + z * se3 + 0.01) == "pass"
    edge = z * se3 - 0.01  # by point value: past the limit, more servers confirm it or bring it back
    assert code(z * se3 + 0.01, edge) == "fail"
    assert code(edge + 0.001, edge) == "fail"
    assert code(edge - 0.001, edge) == "pass"


@pytest.mark.parametrize(
    ("now", "later", "more"),
    [
        (["pass", "pass"], ["pass", "pass"], False),
        (["fail", "pass"], ["fail", "pass"], True),  # a failure is confirmed on a fresh server
        (["inconclusive", "pass"], ["fail", "pass"], True),
        (["inconclusive", "inconclusive"], ["pass", "pass"], True),  # the scenario could still pass
        (["inconclusive", "inconclusive"], ["pass", "inconclusive"], False),  # it cannot pass nor fail
        (["inconclusive", "pass"], ["inconclusive", "pass"], False),
    ],
)
def test_go_on(now, later, more):
    codes = [np.array([STATIC_VERDICTS.index(v) for v in x], dtype=np.int8) for x in (now, later)]
    assert bool(go_on(*codes)) is more


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_attempts": 0}, "static policy: max_attempts: expected an integer >= 1, got 0"),
        ({"alpha": 2.0}, "verdict policy: alpha: expected 0 < alpha < 1, got 2.0"),
        ({"e2e_share": 1.0}, "static policy: e2e_share: expected 0 < e2e_share < 1, got 1.0"),
    ],
)
def test_policy_errors(kwargs, message):
    with pytest.raises(DiffperfError, match=message):
        StaticPolicy(**kwargs)


def test_noise_errors():
    with pytest.raises(DiffperfError, match="noise prior: baseline: expected a finite number >= 0, got -1"):
        StaticNoise(baseline=-1, process=0.1, within=0.1)
    with pytest.raises(DiffperfError, match="noise prior: between: expected a finite number >= 0"):
        StaticNoise(baseline=0.1, process=-0.1, within=0.1)
