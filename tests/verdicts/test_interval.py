"""The ratio estimator and its standard error: hand-checked numbers, and invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diffperf.verdicts.interval import estimate
from pytest_diffperf.verdicts.noise import MAD_TO_SD, Noise, within_scale

NAN = math.nan


def test_between_from_the_run_only():
    """No prior weight: the se is the spread of the two offsets over sqrt(2)."""
    d = np.array([[0.1, 0.1, 0.1], [0.3, 0.3, 0.3]])
    e = estimate(d, Noise(between=0.03, within=0.0, between_weight=0, within_weight=0))
    assert float(e.log_ratio) == pytest.approx(0.2)
    assert float(e.se) == pytest.approx(math.sqrt(0.02 / 2))  # var(0.1, 0.3) = 0.02
    assert (float(e.process_pairs), float(e.request_pairs)) == (2, 6)


def test_prior_pooled_with_the_run():
    """V = (nu0 * V0 + (k - 1) * s2) / (nu0 + k - 1), se = sqrt(V / k)."""
    d = np.array([[0.1, 0.1, 0.1], [0.3, 0.3, 0.3]])
    e = estimate(d, Noise(between=0.03, within=0.0, between_weight=2, within_weight=0))
    v = (2 * 0.03**2 + 1 * 0.02) / 3
    assert float(e.se) == pytest.approx(math.sqrt(v / 2))


def test_one_process_pair_keeps_the_between_prior():
    """k = 1, identical request pairs: the se is the prior's, never 0."""
    d = np.zeros((1, 4))
    e = estimate(d, Noise(between=0.04, within=0.09, within_weight=20))
    within2 = 20 * 0.09**2 / (20 + 3)  # the run's within spread is 0 on 3 degrees of freedom
    v0 = 0.04**2 + math.pi / 2 * within2 / 4
    assert float(e.se) == pytest.approx(math.sqrt(v0))
    assert float(e.log_ratio) == 0


def test_within_scale_hand_checked():
    d = np.array([[-1.0, 0.0, 1.0]])
    scale, dof = within_scale(d, np.array([0.0]), np.array([3.0]))
    assert float(scale) == pytest.approx(MAD_TO_SD * 1.0 * math.sqrt(3 / 2))
    assert float(dof) == 2


def test_missing_request_pairs_and_empty_process_pairs():
    d = np.array([[0.1, NAN, 0.1], [NAN, NAN, NAN], [0.3, 0.3, NAN]])
    e = estimate(d, Noise(between=0.03, within=0.0, between_weight=0, within_weight=0))
    assert float(e.log_ratio) == pytest.approx(0.2)
    assert (float(e.process_pairs), float(e.request_pairs)) == (2, 4)


def test_no_data_is_nan():
    e = estimate(np.full((2, 3), NAN), Noise(0.03, 0.09))
    assert math.isnan(float(e.log_ratio))
    assert math.isnan(float(e.se))


def test_shape_error():
    with pytest.raises(ValueError, match="process-pair and a request-pair axis"):
        estimate(np.zeros(3), Noise(0.03, 0.09))


def test_vectorised_equals_one_by_one():
    rng = np.random.default_rng(0)
    d = rng.normal(0, 0.1, size=(5, 3, 4))
    noise = Noise(0.03, 0.09)
    batch = estimate(d, noise)
    for t in range(5):
        one = estimate(d[t], noise)
        assert float(one.log_ratio) == pytest.approx(batch.log_ratio[t])
        assert float(one.se) == pytest.approx(batch.se[t])


log_ratio_arrays = st.integers(1, 4).flatmap(
    lambda k: st.integers(1, 6).flatmap(
        lambda m: st.lists(st.floats(-0.5, 0.5), min_size=k * m, max_size=k * m).map(
            lambda xs: np.array(xs).reshape(k, m)
        )
    )
)


@settings(max_examples=60, deadline=None)
@given(log_ratio_arrays, st.floats(-1, 1))
def test_a_constant_factor_shifts_the_estimate_only(d, shift):
    """Scaling the candidate by a constant moves log_ratio by log(factor) and leaves se alone."""
    noise = Noise(0.03, 0.09)
    a, b = estimate(d, noise), estimate(d + shift, noise)
    assert float(b.log_ratio) == pytest.approx(float(a.log_ratio) + shift, abs=1e-9)
    assert float(b.se) == pytest.approx(float(a.se), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(log_ratio_arrays)
def test_swapping_the_arms_negates_the_estimate(d):
    noise = Noise(0.03, 0.09)
    a, b = estimate(d, noise), estimate(-d, noise)
    assert float(b.log_ratio) == pytest.approx(-float(a.log_ratio), abs=1e-12)
    assert float(b.se) == pytest.approx(float(a.se), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(log_ratio_arrays)
def test_se_never_below_the_between_prior_share(d):
    """Whatever the run shows, its se keeps the prior's between part, weighted by nu0 / (nu0 + k - 1)."""
    noise = Noise(0.03, 0.09, between_weight=8)
    k = d.shape[0]
    e = estimate(d, noise)
    floor = math.sqrt(8 * 0.03**2 / (8 + k - 1) / k)
    assert float(e.se) >= floor * (1 - 1e-9)
