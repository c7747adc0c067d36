"""This run against an earlier one (``--diffperf-compare-to``, as pytest-benchmark's ``--benchmark-compare``).

Per scenario: the judged e2e then and now and its change, both outcomes, and the stage whose median
time changed the most; scenarios that ran only once are listed as new or gone. Nothing is judged:
the baseline file judges, this shows how the run moved since the other one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from .model import Outcome, ScenarioResult
from .tables import change, num, pct


@dataclass(frozen=True)
class Delta:
    scenario: str
    then_ms: float | None
    now_ms: float | None
    then_outcome: Outcome | None  # None: the scenario did not run then
    now_outcome: Outcome | None  # None: it did not run now
    stage: str  # the stage that moved the most, with its change ('' when unknown)

    @property
    def change(self) -> float | None:
        return change(self.now_ms, self.then_ms) if self.then_ms else None


def stage_medians(scenario: ScenarioResult) -> dict[str, float]:
    """Each stage's median time over a scenario's requests."""
    times: dict[str, list[float]] = {}
    for row in scenario.rows:
        for stage, ms in row.stages_ms.items():
            times.setdefault(stage, []).append(ms)
    return {stage: statistics.median(xs) for stage, xs in times.items()}


def _e2e(scenario: ScenarioResult | None) -> float | None:
    return scenario.measured.get("e2e_ms") if scenario is not None else None


def _stage(then: ScenarioResult, now: ScenarioResult) -> str:
    before, after = stage_medians(then), stage_medians(now)
    moved = [(after[s] - before[s], s) for s in before if s in after]
    if not moved:
        return ""
    delta, stage = max(moved, key=lambda m: abs(m[0]))
    return f"{stage} {delta:+.1f} ms ({pct(change(after[stage], before[stage]))})"


def compare(now: Sequence[ScenarioResult], then: Sequence[ScenarioResult]) -> list[Delta]:
    """Scenario results now against then: this run's order, then the gone ones."""
    before = {s.scenario: s for s in then}
    after = {s.scenario: s for s in now}
    out = [
        Delta(
            name,
            _e2e(before.get(name)),
            _e2e(scenario),
            before[name].outcome if name in before else None,
            scenario.outcome,
            _stage(before[name], scenario) if name in before else "",
        )
        for name, scenario in after.items()
    ]
    out += [Delta(name, _e2e(s), None, s.outcome, None, "") for name, s in before.items() if name not in after]
    return out


def table(deltas: Sequence[Delta]) -> list[list[str]]:
    rows = [["scenario", "then e2e ms", "now e2e ms", "Δ", "outcome then -> now", "stage that moved most"]]
    for d in deltas:
        outcomes = f"{d.then_outcome or '(new)'} -> {d.now_outcome or '(gone)'}"
        rows.append([d.scenario, num(d.then_ms), num(d.now_ms), pct(d.change), outcomes, d.stage or "-"])
    return rows
