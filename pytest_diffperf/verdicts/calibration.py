"""Noise priors measured from runs that already happened: what ``diffperf calibrate`` writes.

A/B (``ab``): each scenario of an A/A run carries, per metric, the run's own ``between`` and
``within`` (:func:`~pytest_diffperf.verdicts.noise.estimate_noise`); the prior is the largest over
the scenarios, rounded up.

Static (``static``): a history of static runs gives, per scenario and metric, each run's requests.
A run is one fresh server, so with ``o_r`` a run's median (log) around the scenario's mean:

- ``within`` is the requests' robust spread around their run's median (MAD, as for A/B);
- ``process`` is the spread of ``o_r`` between runs of the same day, less what the run's own
  requests explain (``c * within**2 / m``); with no day holding two runs, the spread over all runs;
- ``baseline`` is the spread of ``o_r`` over all runs and days, less the same: a stored baseline is
  one such run, and it must cover the drift between the day it was stored and the day it is read.

Each is the largest over the scenarios, rounded up to the next :data:`STEP`, at most
:data:`~pytest_diffperf.verdicts.priors.MAX_SD`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import DiffperfError
from .noise import median_variance_factor, pair_offsets, within_scale
from .priors import MAX_SD

STEP = 0.005  # priors are rounded up to half a percent
MIN_RUNS = 3  # a scenario's series needs three runs before its spread means anything
MIN_DAYS = 2  # a baseline's drift across days needs two days


def round_up(value: float) -> float:
    """``value`` rounded up to the next :data:`STEP`, at most ``MAX_SD`` (0 stays 0), written as such (0.205, not
    0.20500000000000002)."""
    return min(MAX_SD, round(math.ceil(round(value / STEP, 9)) * STEP, 3))


@dataclass(frozen=True)
class Run:
    """One static run of one scenario's metric: its day (``YYYY-MM-DD``) and its requests' values (ms)."""

    day: str
    values: tuple[float, ...]


@dataclass(frozen=True)
class StaticEstimate:
    """A static series' noise (log units), and what it came from."""

    baseline: float
    process: float
    within: float
    runs: int
    days: int
    same_day_pairs: int  # runs beyond the first of their day: what ``process`` was measured on (0: from all runs)


def static_estimate(runs: Sequence[Run]) -> StaticEstimate:
    """The noise of one scenario's metric over its runs (each with at least one value > 0)."""
    runs = [r for r in runs if r.values]
    if len(runs) < MIN_RUNS:
        raise DiffperfError(f"{len(runs)} runs; expected at least {MIN_RUNS}", source="calibration")
    width = max(len(r.values) for r in runs)
    d = np.full((len(runs), width), np.nan)
    for i, r in enumerate(runs):
        d[i, : len(r.values)] = np.log(r.values)
    medians, counts = pair_offsets(d)
    within = float(within_scale(d, medians, counts)[0]) if width > 1 else 0.0
    own = median_variance_factor(counts) * within**2 / counts
    offsets = medians - float(np.mean(medians))
    total = float(np.var(offsets, ddof=1))
    days: dict[str, list[int]] = {}
    for i, r in enumerate(runs):
        days.setdefault(r.day, []).append(i)
    same_day = [idx for idx in days.values() if len(idx) > 1]
    dof = sum(len(idx) - 1 for idx in same_day)
    if dof:
        squares = sum(float(np.sum((offsets[idx] - np.mean(offsets[idx])) ** 2)) for idx in same_day)
        in_day = squares / dof
        own_in_day = float(np.mean(np.concatenate([own[idx] for idx in same_day])))
        process = math.sqrt(max(in_day - own_in_day, 0.0))
    else:
        process = math.sqrt(max(total - float(np.mean(own)), 0.0))
    baseline = max(math.sqrt(max(total - float(np.mean(own)), 0.0)), process)
    return StaticEstimate(baseline, process, within, len(runs), len(days), dof)


@dataclass(frozen=True)
class Largest:
    """The largest of one figure over the scenarios, and which scenario gave it."""

    value: float
    scenario: str


def largest(figures: Mapping[str, float]) -> Largest:
    """The largest of the scenarios' figures (``{scenario: value}``, not empty)."""
    scenario = max(sorted(figures), key=lambda s: figures[s])
    return Largest(figures[scenario], scenario)
