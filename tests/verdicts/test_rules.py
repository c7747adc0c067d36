"""The verdict rules: interval against the tolerance band, the scenario's verdict, the false-alarm split."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.verdicts.rules import check_band, classify, combine, look_alpha, z_value
from pytest_diffperf.verdicts.vocab import IMPROVED, INCONCLUSIVE, REGRESSED, UNCHANGED, VERDICTS


def ln(ratio: float) -> float:
    return math.log(ratio)


@pytest.mark.parametrize(
    ("low", "high", "floor", "verdict"),
    [
        (1.01, 1.05, 0.0, "unchanged"),  # within the tolerance: a real change smaller than it passes
        (0.95, 1.09, 0.0, "unchanged"),
        (1.01, 1.20, 0.0, "regressed"),  # above no change, may be beyond the tolerance
        (1.12, 1.20, 0.0, "regressed"),
        (0.80, 0.99, 0.0, "improved"),
        (0.95, 1.20, 0.0, "inconclusive"),  # straddles the tolerance
        (0.85, 1.20, 0.0, "inconclusive"),
        (1.01, 1.20, 0.02, "inconclusive"),  # not beyond the floor
        (1.03, 1.20, 0.02, "regressed"),
        (0.80, 0.99, 0.02, "inconclusive"),
    ],
)
def test_classify(low, high, floor, verdict):
    code = classify(np.array(ln(low)), np.array(ln(high)), 0.10, floor)
    assert VERDICTS[int(code)] == verdict


def test_the_band_is_symmetric_in_log_space():
    """Unchanged needs the interval above 1/(1+t), not 1-t."""
    edge = 1 / 1.10
    assert VERDICTS[int(classify(np.array(ln(edge * 1.001)), np.array(0.0), 0.10, 0.0))] == "unchanged"
    assert VERDICTS[int(classify(np.array(ln(edge * 0.999)), np.array(0.0), 0.10, 0.0))] == "inconclusive"


def test_nan_is_inconclusive():
    assert int(classify(np.array(math.nan), np.array(math.nan), 0.1, 0.0)) == INCONCLUSIVE


@pytest.mark.parametrize(
    ("codes", "scenario"),
    [
        ([UNCHANGED, UNCHANGED], UNCHANGED),
        ([UNCHANGED, IMPROVED], IMPROVED),
        ([IMPROVED, IMPROVED], IMPROVED),
        ([REGRESSED, IMPROVED], REGRESSED),
        ([INCONCLUSIVE, REGRESSED], REGRESSED),
        ([INCONCLUSIVE, UNCHANGED], INCONCLUSIVE),
        ([INCONCLUSIVE, IMPROVED], INCONCLUSIVE),
        ([], INCONCLUSIVE),
    ],
)
def test_combine(codes, scenario):
    assert int(combine(np.array(codes, dtype=np.int8).reshape(len(codes)))) == scenario


def test_bonferroni_split_and_z():
    assert look_alpha(0.01, 0.5, 10) == pytest.approx(0.0005)
    assert z_value(0.0005) == pytest.approx(3.2905, abs=1e-4)
    assert z_value(0.025) == pytest.approx(1.95996, abs=1e-4)


@pytest.mark.parametrize("spending", [0.5, 1.0, 2.0, 3.0])
def test_spending_over_looks_adds_up_to_the_share(spending):
    parts = [look_alpha(0.01, 0.5, 10, j, spending) for j in range(1, 11)]
    assert sum(parts) == pytest.approx(0.005)
    if spending > 1:
        assert parts == sorted(parts)  # later looks get more
    assert look_alpha(0.01, 0.5, 10, 10, 2.0) == pytest.approx(0.005 * (1 - 0.81))


def test_look_out_of_range():
    with pytest.raises(ValueError, match=r"look must be in 1\.\.10, got 11"):
        look_alpha(0.01, 1.0, 10, 11)


def test_spending_error():
    with pytest.raises(DiffperfError, match="verdict policy: spending: expected a number > 0, got 0"):
        look_alpha(0.01, 1.0, 10, 1, 0)


@pytest.mark.parametrize(
    ("alpha", "message"),
    [(0.0, "expected 0 < alpha < 1, got 0.0"), (1.5, "expected 0 < alpha < 1, got 1.5")],
)
def test_alpha_errors(alpha, message):
    with pytest.raises(DiffperfError, match="verdict policy: alpha: " + message):
        look_alpha(alpha, 1.0, 1)


@pytest.mark.parametrize(
    ("tolerance", "floor", "message"),
    [
        (0.0, 0.0, "e2e metric: tolerance: expected a tolerance > 0, got 0.0"),
        (math.inf, 0.0, "e2e metric: tolerance: expected a tolerance > 0, got inf"),
        (0.1, 0.1, r"e2e metric: floor: expected 0 <= floor < tolerance \(0.1\), got 0.1"),
        (0.1, -0.01, r"e2e metric: floor: expected 0 <= floor < tolerance \(0.1\), got -0.01"),
    ],
)
def test_band_errors(tolerance, floor, message):
    with pytest.raises(DiffperfError, match=message) as info:
        check_band(tolerance, floor, source="e2e metric")
    assert info.value.source == "e2e metric"
