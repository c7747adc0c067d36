"""One scenario's run: measure it on its server, judge it with the limit engine, describe the result."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from .perf import limits
from .perf.measurement import Measurement
from .perf.schema import ScenarioBaseline
from .cases import Case
from .serving.measure import Sample
from .perf.entry import measured_scenario

PERF_PREFIX = "PERFORMANCE:"  # consistency failures start with "CONSISTENCY:" instead


class ScenarioFailure(Exception):
    """A verdict against the scenario (a regression, a missing case or baseline): message only."""


@dataclass
class ScenarioResult:
    """What one scenario produced: per-request rows, every check, and the verdict."""

    case: str
    verdict: str  # pass | fail | unguarded | error | skipped
    rows: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""
    server: dict[str, Any] | None = None  # pid, port, load_ms and log of the server that ran it
    consistency: dict[str, Any] | None = None  # the output-vs-ground-truth result, when compared

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ScenarioResult:
        return cls(**json.loads(text))

    def check(self, name: str) -> dict[str, Any] | None:
        return next((c for c in self.checks if c["name"] == name), None)

    def worst(self) -> dict[str, Any] | None:
        """The check closest to (or furthest over) its limit."""
        judged = [c for c in self.checks if c["actual"] is not None and c["limit"]]
        return max(judged, key=lambda c: c["actual"] / c["limit"], default=None)


def missing_case_message(scenario_id: str, source: str, cases_path: str | None) -> str:
    where = f"the case file {cases_path}" if cases_path else "a case file (--diffperf-cases)"
    return (
        f"scenario {scenario_id!r} has a baseline in {source} but no case definition: "
        f'add {{"id": "{scenario_id}", "model": ..., "task": ..., "prompt": ...}} to the "cases" list of {where}'
    )


def missing_baseline_message(scenario_id: str, baseline_path: str, measurement: Measurement) -> str:
    snippet = json.dumps(measured_scenario(measurement), indent=4)
    return f'add this baseline in the "scenarios" section of {baseline_path}:\n\n"{scenario_id}": {snippet}\n'


def measurement_of(samples: list[Sample], case: Case, load_ms: float | None) -> Measurement:
    return Measurement.from_records(
        [s.record for s in samples], load_ms=load_ms, num_frames=case.num_frames, is_video=case.is_video
    )


def request_rows(
    case_id: str, samples: list[Sample], measurement: Measurement, step_fractions: list[float]
) -> list[dict[str, Any]]:
    load_ms = measurement.load_ms[0] if measurement.load_ms else None
    rows = []
    for i, sample in enumerate(samples):
        steps = measurement.steps[i]
        rows.append(
            {
                "case": case_id,
                "request": sample.index,
                "request_id": sample.output.request_id,
                "e2e_ms": measurement.e2e_ms[i],
                "client_ms": round(sample.client_ms, 2),
                "load_ms": load_ms,
                "avg_step_ms": statistics.fmean(steps) if steps else None,
                "median_step_ms": statistics.median(steps) if steps else None,
                "stages_ms": dict(measurement.stages[i]),
                "sampled_steps_ms": {str(n): steps[n] for n in limits.step_indices(len(steps), step_fractions)},
                "memory_mb": {k: v.model_dump() for k, v in sample.record.memory_snapshots.items()},
            }
        )
    return rows


def judge(
    case_id: str,
    scenario: ScenarioBaseline,
    measurement: Measurement,
    tolerances: Any,
    preset: limits.Preset,
    step_fractions: list[float],
) -> ScenarioResult:
    results = limits.evaluate(scenario, measurement, tolerances, preset, step_fractions=step_fractions)
    checks = [
        {
            "name": r.check.name,
            "kind": r.check.kind,
            "actual": r.actual,
            "expected": r.check.expected,
            "limit": r.check.limit,
            "rel": r.check.rel,
            "pad": r.check.pad,
            "verdict": r.verdict,
        }
        for r in results
    ]
    verdicts = {r.verdict for r in results}
    if verdicts & {"fail", "missing"}:
        failing = sum(r.verdict in ("fail", "missing") for r in results)
        verdict, message = "fail", f"{PERF_PREFIX} {failing} check(s) failed\n{limits.format_failures(results)}"
    elif "unguarded" in verdicts:
        verdict = "unguarded"
        message = "; ".join(r.message for r in results if r.verdict == "unguarded")
    else:
        verdict, message = "pass", ""
    return ScenarioResult(case_id, verdict, checks=checks, message=message)
