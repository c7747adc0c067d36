"""The noise model of A/B timings, its robust estimators, and its calibration from A/A runs.

A request pair (one base and one candidate request, back to back) gives a log ratio
``d = log(candidate / base)``. Within one pair of fresh server processes the ``d`` scatter around
that process pair's own offset (two identical servers do not run at the same speed); the offsets
scatter around the true effect from one process pair to the next. So ``d_ij = effect + b_i + e_ij``
with ``sd(b) = between`` and ``sd(e) = within``; more requests in the same processes shrink only
the ``e`` part. Arrays here hold log ratios shaped ``(..., process_pairs, request_pairs)``, NaN
where a request pair is missing.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import DiffperfError

FloatArray = NDArray[np.float64]
MAD_TO_SD = 1.4826  # sd of a normal distribution / its median absolute deviation
MEDIAN_VARIANCE = math.pi / 2  # var(median of n) * n / sd**2 for large n (exact values are below it)


@dataclass(frozen=True)
class Noise:
    """Prior noise of one metric's log ratio candidate/base (natural-log units, about relative sd).

    ``between`` is the sd of a process pair's offset, ``within`` the sd of one request pair around
    it. The weights say how many process pairs (request pairs) the prior counts for when it is
    pooled with the spread the run itself shows: the prior keeps a run with few process pairs
    honest, the run's own spread takes over as it grows.
    """

    between: float
    within: float
    between_weight: float = 8.0
    within_weight: float = 20.0

    def __post_init__(self) -> None:
        for name in ("between", "within", "between_weight", "within_weight"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise DiffperfError(f"expected a finite number >= 0, got {value!r}", source="noise prior", key=name)
        if self.between_weight == 0 and self.between == 0 and self.within == 0:
            raise DiffperfError("a noise prior of zero cannot bound anything", source="noise prior")


def nanmedian(x: FloatArray, axis: int | tuple[int, ...]) -> FloatArray:
    """``np.nanmedian`` without the all-NaN warning (such slices give NaN), fast when there is no NaN."""
    if not np.isnan(x).any():
        return np.asarray(np.median(x, axis=axis), dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanmedian(x, axis=axis), dtype=np.float64)


def pair_offsets(d: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each process pair's offset (median of its request pairs) and its count of request pairs."""
    counts = np.sum(np.isfinite(d), axis=-1).astype(np.float64)
    return nanmedian(d, axis=-1), counts


def within_scale(d: FloatArray, offsets: FloatArray, counts: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Robust pooled sd of request pairs around their process pair's offset, and its degrees of freedom.

    The median absolute residual times 1.4826, corrected by ``sqrt(n / (n - k))`` for the ``k``
    offsets fitted to ``n`` request pairs; zero with zero degrees of freedom where no process pair
    has two request pairs.
    """
    residuals = np.abs(d - offsets[..., None])
    n = np.sum(counts, axis=-1)
    k = np.sum(counts > 0, axis=-1)
    dof = np.maximum(n - k, 0.0)
    mad = nanmedian(residuals.reshape(*residuals.shape[:-2], -1), axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(dof > 0, MAD_TO_SD * mad * np.sqrt(n / np.maximum(dof, 1.0)), 0.0)
    return np.nan_to_num(scale), dof


def median_variance_factor(counts: FloatArray) -> FloatArray:
    """``var(median of m) * m / sd**2``: 1 for m <= 2 (the mean), pi/2 beyond (an upper bound)."""
    return np.where(counts <= 2, 1.0, MEDIAN_VARIANCE)


@dataclass(frozen=True)
class NoiseEstimate:
    """Noise measured on A/A process pairs (identical builds): what to set a prior to."""

    between: float
    within: float
    offset_sd: float  # sd of the process pairs' offsets, within part included
    process_pairs: int
    request_pairs: int

    def prior(self, *, between_weight: float | None = None, within_weight: float | None = None) -> Noise:
        """This estimate as a prior (weights default to the process and request pairs it came from)."""
        return Noise(
            self.between,
            self.within,
            float(self.process_pairs - 1) if between_weight is None else between_weight,
            float(self.request_pairs - self.process_pairs) if within_weight is None else within_weight,
        )


def estimate_noise(log_ratios: Sequence[Sequence[float]]) -> NoiseEstimate:
    """Split A/A log ratios (one sequence per process pair) into between and within components.

    ``between**2 = var(offsets) - mean(var of each offset from its own request pairs)``, clipped
    at 0. Needs at least two process pairs.
    """
    if len(log_ratios) < 2:
        raise DiffperfError("need at least two A/A process pairs to split between from within", source="calibration")
    width = max(len(x) for x in log_ratios)
    d = np.full((len(log_ratios), width), np.nan)
    for i, x in enumerate(log_ratios):
        d[i, : len(x)] = x
    offsets, counts = pair_offsets(d)
    used = counts > 0
    if used.sum() < 2:
        raise DiffperfError("need at least two A/A process pairs with data", source="calibration")
    within, _ = within_scale(d[used], offsets[used], counts[used])
    offset_sd = float(np.std(offsets[used], ddof=1))
    own = float(np.mean(median_variance_factor(counts[used]) * float(within) ** 2 / counts[used]))
    between = math.sqrt(max(offset_sd**2 - own, 0.0))
    return NoiseEstimate(between, float(within), offset_sd, int(used.sum()), int(counts.sum()))
