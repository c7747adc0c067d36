"""Change points of a run series: a step is found where it is, one odd run and noise are no step."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.verdicts.changepoint import change_points


def noisy(level: float, n: int, rng: np.random.Generator, cv: float = 0.03) -> list[float]:
    return list(level * (1 + cv * rng.standard_normal(n)))


def test_a_step_is_found_at_its_first_run():
    rng = np.random.default_rng(1)
    series = noisy(1000.0, 8, rng) + noisy(1200.0, 6, rng)
    (step,) = change_points(series)
    assert step.index == 8
    assert step.change == pytest.approx(0.2, abs=0.05) and step.p_value < 0.01


def test_two_regressions_in_turn_are_both_found():
    rng = np.random.default_rng(2)
    series = noisy(1000.0, 7, rng) + noisy(1250.0, 7, rng) + noisy(1600.0, 7, rng)
    assert [c.index for c in change_points(series)] == [7, 14]


def test_a_single_outlier_is_no_step():
    rng = np.random.default_rng(3)
    series = noisy(1000.0, 12, rng)
    series[6] = 5000.0
    assert change_points(series) == []


def test_noise_alone_is_no_step():
    rng = np.random.default_rng(4)
    assert change_points(noisy(1000.0, 20, rng, cv=0.13)) == []


def test_a_significant_but_tiny_step_is_below_min_change():
    series = [1000.0] * 8 + [1010.0] * 8  # +1 %: certain, and too small to report
    assert change_points(series) == []
    assert [c.index for c in change_points(series, min_change=0.005)] == [8]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": 1.5}, "alpha: expected a level between 0 and 1, got 1.5"),
        ({"min_size": 0}, "min_size: expected an integer >= 1, got 0"),
        ({"min_change": -0.1}, "min_change: expected a change >= 0, got -0.1"),
    ],
)
def test_bad_settings(kwargs, message):
    with pytest.raises(DiffperfError) as info:
        change_points([1.0, 2.0, 3.0], **kwargs)
    assert str(info.value) == message


def test_values_must_be_finite():
    with pytest.raises(DiffperfError, match="values must be finite numbers"):
        change_points([1.0, float("nan"), 2.0])


def test_the_step_is_placed_by_the_values_where_the_ranks_cannot_tell():
    # the last run before the step is the highest of its level: splitting before or after it separates the
    # ranks equally well (and more pairs favour the earlier split); the values say where the level moved
    series = [2694.5, 2606.7, 2733.2, 2567.7, 2705.5, 2762.5, 3568.9, 3504.0, 3490.5, 3453.8]
    (step,) = change_points(series)
    assert step.index == 6 and step.before == pytest.approx(2700.0, abs=1)
