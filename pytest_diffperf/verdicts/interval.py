"""The candidate/base ratio of one metric and its confidence interval, over process pairs and request pairs.

Vectorised: ``d`` holds log ratios shaped ``(..., process_pairs, request_pairs)`` (NaN: missing),
so one call judges one run or, with a leading trials axis, a whole resampling benchmark.

Estimator: each process pair's offset is the median of its request pairs (robust to a stall);
the effect is the mean of the offsets, each process pair weighing the same. Its variance is
``V / k`` for ``k`` process pairs, where ``V`` (the variance of one process pair's offset) pools a
prior ``between**2 + c * within**2 / m`` with the spread of the ``k`` offsets the run shows (an
empirical-Bayes, "moderated" variance: the prior counts as ``between_weight`` process pairs). The
run's own within-pair spread is pooled the same way with the prior's ``within``. So a single
process pair still gets the between-process part it cannot see, and a run noisier than the prior
widens its own interval. A bootstrap over process pairs cannot do either with 1-3 pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .noise import FloatArray, Noise, median_variance_factor, pair_offsets, within_scale


@dataclass(frozen=True)
class RatioEstimate:
    """``log(candidate / base)`` with its standard error; arrays over any leading axes."""

    log_ratio: FloatArray
    se: FloatArray
    process_pairs: FloatArray
    request_pairs: FloatArray
    within: FloatArray  # the run's own within-pair sd (robust), 0 without degrees of freedom
    within_dof: FloatArray

    def bounds(self, z: float | FloatArray) -> tuple[FloatArray, FloatArray]:
        """The interval ``log_ratio -+ z * se`` (NaN where there is no data)."""
        return self.log_ratio - z * self.se, self.log_ratio + z * self.se


def estimate(d: FloatArray, noise: Noise) -> RatioEstimate:
    """The ratio's estimate and standard error from log ratios ``(..., process_pairs, request_pairs)``."""
    d = np.asarray(d, dtype=np.float64)
    if d.ndim < 2:
        raise ValueError(f"log ratios need a process-pair and a request-pair axis, got shape {d.shape}")
    offsets, counts = pair_offsets(d)
    used = counts > 0
    k = np.sum(used, axis=-1).astype(np.float64)
    n = np.sum(counts, axis=-1)
    scale, dof = within_scale(d, offsets, counts)
    w0 = noise.within_weight
    denom = w0 + dof
    within2 = np.where(
        denom > 0, (w0 * noise.within**2 + dof * scale**2) / np.where(denom > 0, denom, 1.0), noise.within**2
    )
    safe_counts = np.where(used, counts, 1.0)
    own = np.where(used, median_variance_factor(counts) * within2[..., None] / safe_counts, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_own = np.sum(own, axis=-1) / k
        masked = np.where(used, offsets, 0.0)
        est = np.sum(masked, axis=-1) / k
        spread = np.where(used, offsets - est[..., None], 0.0)
        s2 = np.where(k >= 2, np.sum(spread**2, axis=-1) / np.maximum(k - 1, 1.0), 0.0)
        v0 = noise.between**2 + mean_own
        b0 = noise.between_weight
        pooled_denom = b0 + k - 1
        v = np.where(pooled_denom > 0, (b0 * v0 + (k - 1) * s2) / np.where(pooled_denom > 0, pooled_denom, 1.0), v0)
        se = np.sqrt(v / k)
    est = np.where(k > 0, est, np.nan)
    se = np.where(k > 0, se, np.nan)
    return RatioEstimate(est, se, k, n, scale, dof)
