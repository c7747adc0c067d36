"""Change points in a series of runs: steps in the level, not single outliers.

Pettitt's test (1979) finds the split ``t`` that best separates a series into a before and an after:
with ``r`` the ranks of the values, ``U_t = 2 * sum(r[:t]) - t * (n + 1)`` (the Mann-Whitney
statistic of the two segments) and ``K = max |U_t|`` over the allowed splits. Ranks make it blind
to how far an outlier lies, and each segment must hold ``min_size`` runs, so one odd run is never a
segment of its own. The p-value is a permutation test of ``K`` (the same split rule on shuffled
ranks, a fixed seed: the same series always gets the same answer), which is exact for the small
series a CI history has, where Pettitt's asymptotic formula is far too conservative. Ranks say *that* the
level moved but only roughly *where*: in ``1, 1, 1.1, 2, 2`` both the split before ``1.1`` and the
one after it separate every lower rank from every higher one, and ``|U_t|`` favours the one with
more pairs. So the step is placed where the two segments' medians fit the values best (the least
sum of absolute deviations, among the splits whose ``|U_t|`` is at least half of ``K``), and only
its significance comes from the ranks. Several steps are found by binary segmentation: a significant split is kept when the medians on its two sides
differ by at least ``min_change``, and each side is searched again.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import DiffperfError

ALPHA = 0.01
MIN_SIZE = 2
MIN_CHANGE = 0.05
PERMUTATIONS = 4999
SEED = 20240917


@dataclass(frozen=True)
class ChangePoint:
    """A step at ``index``: the first value of the new level."""

    index: int
    before: float  # median of the segment before (within the searched span)
    after: float  # median of the segment after
    p_value: float

    @property
    def change(self) -> float:
        """``after / before - 1``."""
        return self.after / self.before - 1 if self.before else math.inf


def ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ranks 1..n along the last axis, ties given their average rank."""
    order = np.argsort(values, axis=-1, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=-1)
    base = np.arange(1, values.shape[-1] + 1, dtype=np.float64)
    out = np.empty_like(values, dtype=np.float64)
    for index in np.ndindex(values.shape[:-1]):
        row = sorted_values[index]
        rank = base.copy()
        start = 0
        for end in range(1, len(row) + 1):
            if end == len(row) or row[end] != row[start]:
                rank[start:end] = (start + 1 + end) / 2
                start = end
        out[index][order[index]] = rank
    return out


def scores(rank_rows: NDArray[np.float64], min_size: int) -> NDArray[np.float64]:
    """For each row of ranks, ``|U_t|`` of every split ``t = 1..n-1`` (-1 where a side would hold fewer than
    ``min_size`` values)."""
    n = rank_rows.shape[-1]
    t = np.arange(1, n, dtype=np.float64)
    u = 2 * np.cumsum(rank_rows, axis=-1)[..., :-1] - t * (n + 1)
    return np.where((t >= min_size) & (t <= n - min_size), np.abs(u), -1.0)


def place(x: NDArray[np.float64], score: NDArray[np.float64]) -> int:
    """Where the step lies (the first index after it): of the allowed splits whose ``|U_t|`` (``score``) is at
    least half the largest, the one whose segments' medians leave the least sum of absolute deviations."""
    candidates = [t for t in range(1, len(x)) if score[t - 1] >= 0 and score[t - 1] >= score.max() / 2]
    cost = [float(np.abs(x[:t] - np.median(x[:t])).sum() + np.abs(x[t:] - np.median(x[t:])).sum()) for t in candidates]
    return candidates[int(np.argmin(cost))]


def split(
    values: Sequence[float], min_size: int = MIN_SIZE, permutations: int = PERMUTATIONS, seed: int = SEED
) -> tuple[int, float] | None:
    """The best single split of ``values`` (its index) and its permutation p-value; None when too short."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) < 2 * min_size:
        return None
    observed = ranks(x[None, :])
    score = scores(observed, min_size)[0]
    k, index = float(score.max()), place(x, score)
    rng = np.random.default_rng(seed)
    shuffled = rng.permuted(np.broadcast_to(observed, (permutations, len(x))).copy(), axis=1)
    ks = scores(shuffled, min_size).max(axis=-1)
    p_value = (1 + int(np.sum(ks >= k - 1e-9))) / (permutations + 1)
    return int(index), p_value


def change_points(
    values: Sequence[float],
    *,
    alpha: float = ALPHA,
    min_size: int = MIN_SIZE,
    min_change: float = MIN_CHANGE,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> list[ChangePoint]:
    """Every step in ``values`` (in order of index): significant at ``alpha`` and at least ``min_change`` in size."""
    if not 0 < alpha < 1:
        raise DiffperfError(f"expected a level between 0 and 1, got {alpha!r}", source="alpha")
    if not (isinstance(min_size, int) and min_size >= 1):
        raise DiffperfError(f"expected an integer >= 1, got {min_size!r}", source="min_size")
    if not min_change >= 0:
        raise DiffperfError(f"expected a change >= 0, got {min_change!r}", source="min_change")
    x = [float(v) for v in values]
    if any(not math.isfinite(v) for v in x):
        raise DiffperfError("values must be finite numbers", source="values")
    found: list[ChangePoint] = []
    spans = [(0, len(x))]
    while spans:
        lo, hi = spans.pop()
        best = split(x[lo:hi], min_size, permutations, seed)
        if best is None:
            continue
        index, p_value = best
        before, after = float(np.median(x[lo : lo + index])), float(np.median(x[lo + index : hi]))
        size = abs(after / before - 1) if before else math.inf
        if p_value < alpha and size >= min_change:
            found.append(ChangePoint(lo + index, before, after, p_value))
            spans += [(lo, lo + index), (lo + index, hi)]
    return sorted(found, key=lambda c: c.index)
