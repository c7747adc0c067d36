"""The whole adaptive A/B rule on simulated runs with per-process offsets: false alarms and detection.

Seeded and vectorised (the benchmark's path, on synthetic noise shaped like the noise study's:
e2e offsets sd 3.5 %, request pairs sd 8.5 % with heavy tails). The figures on recorded real
sessions are in docs/benchmarks.md; this guards the calibration against regressions in the code.
"""

from __future__ import annotations

import numpy as np

from pytest_diffperf.verdicts.abstats import judge_ab_metrics
from pytest_diffperf.verdicts.design import ABDesign
from pytest_diffperf.verdicts.metrics import VerdictPolicy
from pytest_diffperf.verdicts.vocab import REGRESSED, UNCHANGED

from .synth import log_ratios

TRIALS = 4000
DESIGN = ABDesign()
DENOISE = "stage[DenoisingStage]"


def simulate(denoise_effect: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    k, m = DESIGN.process_pair_budget, DESIGN.request_pairs
    denoise = log_ratios(rng, TRIALS, k, m, between=0.02, within=0.085, effect=np.log1p(denoise_effect))
    other = log_ratios(rng, TRIALS, k, m, between=0.08, within=0.12)
    e2e = np.log(0.7 * np.exp(denoise) + 0.3 * np.exp(other))  # denoise is 70 % of e2e
    logs = {"e2e": e2e, DENOISE: denoise}
    codes = np.stack(
        [
            judge_ab_metrics({n: d[:, : j + 1] for n, d in logs.items()}, VerdictPolicy(), DESIGN).scenario
            for j in range(k)
        ],
        axis=1,
    )
    return DESIGN.stop_looks(codes)


def test_no_change_false_alarms_stay_under_one_percent():
    pairs, final = simulate(0.0, seed=11)
    assert (final == REGRESSED).mean() <= 0.01
    assert (final == UNCHANGED).mean() >= 0.8  # and mostly decided
    assert 2 * DESIGN.request_pairs * pairs.max() <= DESIGN.max_requests


def test_a_ten_percent_denoise_regression_is_caught():
    _pairs, final = simulate(0.10, seed=12)
    assert (final == REGRESSED).mean() >= 0.95
    assert (final == UNCHANGED).mean() <= 0.01


def test_large_regressions_stop_early():
    pairs, final = simulate(0.5, seed=13)
    assert (final == REGRESSED).all()
    assert (pairs == 2).all()  # at the first look: a verdict needs a second process pair
