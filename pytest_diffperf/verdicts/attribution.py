"""Stage attribution: which stages explain a scenario's e2e change, and by what share.

A stage's share is its change in ms over e2e's change in ms, each ``(ratio - 1) * base median``:
"e2e +12 % [+8, +16], DenoisingStage +15 % explains 94 %". A stage is named when its change is
significant in the direction of e2e's change (``log_ratio / se > NAMING_Z``: one-sided 1 %, looser
than the gates, since only a scenario already judged regressed or improved is attributed) and its
share is at least ``MIN_SHARE``. Shares need not add up to 100 % (the other stages, overheads
outside any stage, and noise). A share over 100 % means the stage changed by more ms than e2e's
estimate did (other stages moved the other way, or e2e's own interval, wider, centres lower); it
reads "explains all of it" with both changes in ms ("DenoisingStage +190.2 % explains all of it
(+290 ms; e2e +105 ms)"), never as a percentage above 100.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .noise import FloatArray

MIN_SHARE = 0.10
NAMING_Z = 2.326  # one-sided 1 %


def shares(
    e2e_log_ratio: FloatArray, e2e_base_ms: FloatArray, log_ratio: FloatArray, base_ms: FloatArray
) -> FloatArray:
    """A stage's share of e2e's change (NaN where e2e did not change)."""
    e2e_delta = np.expm1(e2e_log_ratio) * e2e_base_ms
    delta = np.expm1(log_ratio) * base_ms
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(e2e_delta != 0, delta / e2e_delta, np.nan)


def named(e2e_log_ratio: FloatArray, share: FloatArray, log_ratio: FloatArray, se: FloatArray) -> NDArray[np.bool_]:
    """Whether a stage is named: significant on e2e's side (see the module docstring), share >= MIN_SHARE."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.asarray(log_ratio) / np.asarray(se)
    significant = np.where(np.asarray(e2e_log_ratio) > 0, t > NAMING_Z, t < -NAMING_Z)
    return np.asarray(significant & (np.nan_to_num(share, nan=-np.inf) >= MIN_SHARE), dtype=np.bool_)


def percent(ratio: float) -> str:
    """A ratio as a signed change: 1.123 -> '+12.3 %'."""
    return f"{(ratio - 1) * 100:+.1f} %"


def span(low: float, high: float) -> str:
    """An interval on a ratio as signed changes: '[+8.1, +16.2]'."""
    return f"[{(low - 1) * 100:+.1f}, {(high - 1) * 100:+.1f}]"


@dataclass(frozen=True)
class StageShare:
    """One stage's change and its share of e2e's change."""

    stage: str
    ratio: float
    low: float
    high: float
    delta_ms: float
    share: float  # NaN when e2e did not change
    named: bool

    def text(self) -> str:
        if math.isnan(self.share):
            share = ""
        elif self.share > 1:
            share = f" explains all of it ({self.delta_ms:+.0f} ms; e2e {self.delta_ms / self.share:+.0f} ms)"
        else:
            share = f" explains {self.share * 100:.0f} %"
        return f"{self.stage} {percent(self.ratio)}{share}"


@dataclass(frozen=True)
class Attribution:
    """e2e's change and every stage's part in it, largest share first."""

    ratio: float
    low: float
    high: float
    delta_ms: float
    stages: tuple[StageShare, ...]

    @property
    def named(self) -> tuple[str, ...]:
        """The stages that explain the change, largest share first."""
        return tuple(s.stage for s in self.stages if s.named)

    def text(self, verdict: str = "") -> str:
        """e2e's change (with its own ``verdict`` when given) and the stages named."""
        head = f"e2e {percent(self.ratio)} {span(self.low, self.high)}" + (f" {verdict}" if verdict else "")
        parts = [s.text() for s in self.stages if s.named]
        if parts:
            return ", ".join([head, *parts])
        largest = next((s for s in self.stages if not math.isnan(s.share)), None)
        tail = "" if largest is None else f" (largest: {largest.text()})"
        return f"{head}, explained by no single stage{tail}"


@dataclass(frozen=True)
class Change:
    """A metric's ratio, its interval, the standard error of its log and its base median (ms)."""

    ratio: float
    low: float
    high: float
    se: float
    base_ms: float


def attribute(e2e: Change, stages: Mapping[str, Change]) -> Attribution:
    """Attribution of e2e's change to the stages (by stage name)."""
    e2e_log = math.log(e2e.ratio)
    rows: list[StageShare] = []
    for stage, c in stages.items():
        share = float(shares(_a(e2e_log), _a(e2e.base_ms), _a(math.log(c.ratio)), _a(c.base_ms)))
        is_named = bool(named(_a(e2e_log), _a(share), _a(math.log(c.ratio)), _a(c.se)))
        rows.append(StageShare(stage, c.ratio, c.low, c.high, (c.ratio - 1) * c.base_ms, share, is_named))
    rows.sort(key=_order)
    return Attribution(e2e.ratio, e2e.low, e2e.high, (e2e.ratio - 1) * e2e.base_ms, tuple(rows))


def _a(x: float) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _order(row: StageShare) -> tuple[bool, float]:
    return (math.isnan(row.share), -row.share if not math.isnan(row.share) else 0.0)
