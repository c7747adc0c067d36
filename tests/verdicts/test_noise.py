"""The noise model: priors and their errors, calibration from A/A process pairs."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.verdicts.noise import Noise, estimate_noise


def test_estimate_recovers_known_components():
    rng = np.random.default_rng(3)
    k, m = 400, 10
    d = rng.normal(0, 0.05, size=(k, 1)) + rng.normal(0, 0.1, size=(k, m))
    est = estimate_noise([list(row) for row in d])
    assert est.between == pytest.approx(0.05, abs=0.01)
    assert est.within == pytest.approx(0.1, abs=0.01)
    assert (est.process_pairs, est.request_pairs) == (400, 4000)
    prior = est.prior()
    assert (prior.between_weight, prior.within_weight) == (399, 3600)
    assert est.prior(between_weight=8).between_weight == 8


def test_estimate_clips_between_at_zero():
    rng = np.random.default_rng(4)
    d = rng.normal(0, 0.1, size=(6, 30))
    est = estimate_noise([list(row) for row in d])
    assert est.between >= 0
    assert est.offset_sd > 0


def test_ragged_and_missing_process_pairs():
    est = estimate_noise([[0.1, 0.12, 0.08], [-0.05, -0.03], []])
    assert est.process_pairs == 2
    assert est.request_pairs == 5


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([[0.1, 0.2]], "calibration: need at least two A/A process pairs to split between from within"),
        ([[0.1], []], "calibration: need at least two A/A process pairs with data"),
    ],
)
def test_estimate_errors(pairs, message):
    with pytest.raises(DiffperfError, match=message):
        estimate_noise(pairs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"between": -0.1, "within": 0.1}, "noise prior: between: expected a finite number >= 0, got -0.1"),
        ({"between": 0.1, "within": float("nan")}, "noise prior: within: expected a finite number >= 0, got nan"),
        (
            {"between": 0.0, "within": 0.0, "between_weight": 0.0},
            "noise prior: a noise prior of zero cannot bound anything",
        ),
    ],
)
def test_noise_errors(kwargs, message):
    with pytest.raises(DiffperfError, match=message):
        Noise(**kwargs)
