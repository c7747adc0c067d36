"""Static mode judged with the run's noise: the scenario's verdict, its message, attribution and re-measure."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_diffperf.judging.noisy import judge_noisy, pooled
from pytest_diffperf.judging.verdict import E2E_AND_LOAD
from pytest_diffperf.perf.limits import JudgeRules, get_preset
from pytest_diffperf.perf.measurement import Measurement
from pytest_diffperf.perf.schema import ScenarioBaseline, Tolerances
from pytest_diffperf.verdicts.static import StaticPolicy

STAGES = {"TextEncodingStage": 10.0, "DenoisingStage": 300.0, "DecodingStage": 100.0}
BASELINE = ScenarioBaseline(
    stages_ms=STAGES,
    denoise_step_ms={str(i): 25.0 for i in range(12)},
    expected_e2e_ms=420.0,
    expected_avg_denoise_ms=25.0,
    expected_median_denoise_ms=25.0,
    expected_load_ms=8000.0,
    runtime_peak_host_anon_mb=500.0,
)
TIGHT = Tolerances(e2e=0.1, denoise_stage=0.1, non_denoise_stage=0.5, denoise_step=0.5, denoise_agg=0.1, load=0.5)
WIDE = Tolerances(e2e=4.0, denoise_stage=4.0, non_denoise_stage=4.0, denoise_step=4.0, denoise_agg=4.0, load=4.0)
FRACTIONS = (0.0, 0.5, 1.0)
POLICY = StaticPolicy(max_attempts=3)


def attempt(seed: int, denoise_delay_ms: float = 0.0, memory_mb: float = 500.0, n: int = 3) -> Measurement:
    """One fresh server's requests: the baseline's figures with 8 % request noise; a delay inside DenoisingStage."""
    rng = np.random.default_rng(seed)
    stages, steps, e2e = [], [], []
    for _ in range(n):
        s = {k: v * float(rng.lognormal(0, 0.08)) for k, v in STAGES.items()}
        s["DenoisingStage"] += denoise_delay_ms
        stages.append(s)
        steps.append([25.0 * float(rng.lognormal(0, 0.05)) for _ in range(12)])
        e2e.append(sum(s.values()) + 10.0)
    return Measurement(
        e2e_ms=e2e, steps=steps, stages=stages, load_ms=(8000.0,), memory={"runtime_peak_host_anon_mb": [memory_mb] * n}
    )


def judge(attempts, tolerances=TIGHT):
    return judge_noisy("s", BASELINE, attempts, JudgeRules(tolerances, get_preset("sglang"), FRACTIONS), POLICY, 12.5)


def test_pooled_keeps_every_request_and_one_load_per_attempt():
    both = pooled([attempt(1), attempt(2, n=2)])
    assert len(both.e2e_ms) == len(both.steps) == len(both.stages) == 5
    assert list(both.load_ms) == [8000.0, 8000.0]
    assert len(both.memory["runtime_peak_host_anon_mb"]) == 5


def test_a_tripled_e2e_fails_with_the_denoising_stage_named():
    judged = judge([attempt(3, denoise_delay_ms=840.0)])
    result = judged.result
    assert result.verdict == "fail"
    assert judged.remeasure  # a failing check is measured again before it is reported
    assert result.noise is not None
    assert result.noise.attribution is not None
    assert result.noise.attribution.named == ["DenoisingStage"]
    failing = {c.name for c in result.noise.checks if c.verdict == "fail"}
    assert {"e2e", "stage[DenoisingStage]"} <= failing
    assert "step[0]" not in failing  # the delay sits outside the steps
    assert result.message.startswith("PERFORMANCE: ")
    assert "(1 fresh server(s), 3 requests)" in result.message
    assert "against the stored baseline: e2e +" in result.message and "DenoisingStage +" in result.message
    assert "explains" in result.message
    assert (result.noise.attempts, result.noise.requests, result.noise.wall_s) == (1, 3, 12.5)


def test_no_change_passes_limits_inside_the_noise_by_point_value():
    """+10 % e2e, +50 % load and the denoising stage's limit lie within the noise fresh servers cannot remove: judged
    by point value, they pass at once; the step checks are judged by interval and need more servers."""
    first = judge([attempt(4)])
    assert first.result.verdict == "inconclusive"
    assert first.remeasure  # every open check is forecast to pass on 3 servers
    assert first.result.noise is not None
    by_point = {c.name for c in first.result.noise.checks if c.judged_by == "point value"}
    assert by_point == {"e2e", "load", "stage[DenoisingStage]"}
    assert {c.verdict for c in first.result.noise.checks if c.name in by_point} == {"pass"}
    assert first.result.message.endswith(
        "\n  judged by point value (each limit within the noise): e2e, load, stage[DenoisingStage]"
    )
    assert "inconclusive (1 fresh server(s), 3 requests): the run's noise supports neither a pass nor a fail" in (
        first.result.message
    )
    done = judge([attempt(4), attempt(41), attempt(42)])
    assert (done.result.verdict, done.result.message, done.remeasure) == ("pass", "", False)


def test_past_a_limit_inside_the_noise_but_not_past_the_noise_is_inconclusive_and_measured_again():
    """e2e +15 % against +10 %: its point value is past the limit, its interval includes the stored value: inconclusive,
    measured again while servers remain (to confirm it or bring it back)."""
    judged = judge([attempt(4, denoise_delay_ms=63.0)])
    assert judged.result.verdict == "inconclusive"
    assert judged.remeasure
    assert "e2e: inconclusive by point value: " in judged.result.message
    assert judged.result.outcome == "inconclusive"
    assert not judge([attempt(4 + i, denoise_delay_ms=63.0) for i in range(3)]).remeasure  # the budget is spent


def test_no_change_passes_wide_limits():
    judged = judge([attempt(5)], WIDE)
    assert judged.result.verdict == "pass"
    assert judged.result.message == ""
    assert not judged.remeasure
    assert judged.result.noise is not None
    assert {c.verdict for c in judged.result.noise.checks} == {"pass"}


def test_memory_stays_deterministic():
    judged = judge([attempt(6, memory_mb=2000.0)], WIDE)
    assert judged.result.verdict == "fail"
    assert not judged.remeasure  # memory does not jitter: measuring again cannot change it
    assert "runtime_peak_host_anon_mb" in judged.result.message


@pytest.mark.parametrize("attempts", [2, 3])
def test_re_measures_narrow_the_interval(attempts):
    one = judge([attempt(7, denoise_delay_ms=840.0)]).result.noise
    more = judge([attempt(7 + i, denoise_delay_ms=840.0) for i in range(attempts)]).result.noise
    assert one is not None and more is not None
    width = {r.name: r.high / r.low for r in one.checks}
    assert all(r.high / r.low < width[r.name] for r in more.checks if r.name == "e2e")
    assert more.attempts == attempts


def test_run_perf_check_false_judges_e2e_and_load_alone_and_host_memory_only_where_reported():
    """SGLang's run_perf_check false: a slow stage alone is not judged; where the platform reports no
    host memory, a grown peak is not judged either."""
    slow_stage = [attempt(7, denoise_delay_ms=840.0), attempt(8, denoise_delay_ms=840.0)]
    kinds = E2E_AND_LOAD
    result = judge_noisy(
        "s", BASELINE, slow_stage, JudgeRules(WIDE, get_preset("sglang"), FRACTIONS, kinds), POLICY, 1.0
    ).result
    assert {c.kind for c in result.checks} <= set(kinds)
    assert result.noise is not None
    assert {c.name for c in result.noise.checks} <= {"e2e", "load"}
    grown = [attempt(9, memory_mb=5000.0)]
    assert judge(grown, WIDE).result.verdict == "fail"  # the peak is a deterministic check
    unmeasured = JudgeRules(WIDE, get_preset("sglang"), FRACTIONS, host_anon=False)
    unjudged = judge_noisy("s", BASELINE, grown, unmeasured, POLICY, 1.0).result
    assert not [c for c in unjudged.checks if "host_anon" in c.name]
    assert unjudged.verdict != "fail"
