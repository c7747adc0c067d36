"""The verdict rules: an interval against a tolerance band, the false-alarm budget, a scenario's verdict.

One metric, interval ``[low, high]`` on ``log(candidate / base)``, tolerance ``t``, floor ``f``:

- ``unchanged`` when the interval lies within the tolerance, ``(1/(1+t), 1+t)``: any change is
  smaller than the tolerance (this takes precedence: a real change within tolerance passes);
- ``regressed`` when it lies beyond the floor, above ``1+f`` (and is not unchanged); ``improved``
  when below ``1/(1+f)``;
- ``inconclusive`` otherwise: it straddles the tolerance (at budget end this is the verdict).

A scenario is ``regressed`` when one of its gated metrics is, ``unchanged``/``improved`` when all
gated metrics are decided, else ``inconclusive``. False alarms are bounded by Bonferroni: a
scenario's budget ``alpha`` is split over its gated metrics by weight and over the looks the
adaptive design may take (more of it for the later looks), and each interval is two-sided with
that look's share in each tail.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import NDArray

from ..errors import DiffperfError
from .noise import FloatArray
from .vocab import IMPROVED, INCONCLUSIVE, REGRESSED, UNCHANGED

CodeArray = NDArray[np.int8]


def check_band(tolerance: float, floor: float, *, source: str) -> None:
    """A tolerance band must satisfy ``0 <= floor < tolerance``."""
    if not (math.isfinite(tolerance) and tolerance > 0):
        raise DiffperfError(f"expected a tolerance > 0, got {tolerance!r}", source=source, key="tolerance")
    if not (math.isfinite(floor) and 0 <= floor < tolerance):
        raise DiffperfError(
            f"expected 0 <= floor < tolerance ({tolerance:g}), got {floor!r}", source=source, key="floor"
        )


def look_alpha(alpha: float, share: float, looks: int, look: int = 1, spending: float = 1.0) -> float:
    """One tail's false-alarm probability at look ``look`` of ``looks`` (Bonferroni over the looks).

    ``alpha * share`` is spent as ``(look / looks) ** spending - ((look - 1) / looks) ** spending``
    of it: 1 spends evenly; larger values keep more for the last looks (the Kim-DeMets power
    family: 1 is close to Pocock's boundaries, 3 to O'Brien-Fleming's).
    """
    if not (0 < alpha < 1):
        raise DiffperfError(f"expected 0 < alpha < 1, got {alpha!r}", source="verdict policy", key="alpha")
    if not (0 < share <= 1):
        raise ValueError(f"a metric's share of the false-alarm budget must be in (0, 1], got {share!r}")
    if not 1 <= look <= looks:
        raise ValueError(f"look must be in 1..{looks}, got {look!r}")
    if not (math.isfinite(spending) and spending > 0):
        raise DiffperfError(f"expected a number > 0, got {spending!r}", source="verdict policy", key="spending")
    spent = float((look / looks) ** spending - ((look - 1) / looks) ** spending)
    return alpha * share * spent


def z_value(alpha_one_tail: float) -> float:
    """The normal quantile ``z`` with ``P(Z > z) = alpha_one_tail``."""
    return NormalDist().inv_cdf(1 - alpha_one_tail)


def classify(low: FloatArray, high: FloatArray, tolerance: float, floor: float) -> CodeArray:
    """Verdict codes (index into ``VERDICTS``) of intervals on the log ratio; NaN is inconclusive."""
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    edge, noise_floor = math.log1p(tolerance), math.log1p(floor)
    unchanged = (high < edge) & (low > -edge)
    codes = np.full(np.broadcast(low, high).shape, INCONCLUSIVE, dtype=np.int8)
    codes[(low > noise_floor) & ~unchanged] = REGRESSED
    codes[(high < -noise_floor) & ~unchanged] = IMPROVED
    codes[unchanged] = UNCHANGED
    return codes


def combine(gated: CodeArray) -> CodeArray:
    """A scenario's verdict codes from its gated metrics' codes (last axis): see the module docstring."""
    gated = np.asarray(gated, dtype=np.int8)
    if gated.shape[-1] == 0:
        return np.full(gated.shape[:-1], INCONCLUSIVE, dtype=np.int8)
    decided = np.all((gated == UNCHANGED) | (gated == IMPROVED), axis=-1)
    out = np.full(gated.shape[:-1], INCONCLUSIVE, dtype=np.int8)
    out[decided] = UNCHANGED
    out[decided & np.any(gated == IMPROVED, axis=-1)] = IMPROVED
    out[np.any(gated == REGRESSED, axis=-1)] = REGRESSED
    return out


def decisive(codes: CodeArray) -> NDArray[np.bool_]:
    """Whether a scenario verdict ends the adaptive design (anything but inconclusive)."""
    return np.asarray(np.asarray(codes) != INCONCLUSIVE, dtype=np.bool_)
