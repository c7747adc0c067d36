"""Judging one scenario: its measurement, its checks against the baseline, its request rows and messages."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from ..cases import Case
from ..errors import DiffperfFailure
from ..perf import limits
from ..perf.entry import entry_from_measurement
from ..perf.measurement import Measurement
from ..perf.schema import ScenarioBaseline
from ..results.model import CheckRecord, Outcome, ScenarioResult
from ..results.rows import MemoryFigures, RequestRow
from ..results.tables import format_failures
from ..serving.measure import Sample
from ..verdicts.vocab import Side

# The judged values a result carries (JUnit properties, the summary): check name -> result key.
JUDGED = {"e2e": "e2e_ms", "load": "load_ms", "avg_denoise": "avg_step_ms", "median_denoise": "median_step_ms"}

PERF_PREFIX = "PERFORMANCE:"  # consistency failures start with "CONSISTENCY:" instead
# What SGLang judges of a case with run_perf_check false: "disabling stage checks must not disable the
# request's e2e guard" (test_server_common.py:470-472).
E2E_AND_LOAD: frozenset[limits.CheckKind] = frozenset({"e2e", "load"})


class ScenarioFailure(DiffperfFailure):
    """A verdict against the scenario (a regression, a missing case or baseline): message only."""


def missing_case_message(scenario_id: str, source: str, cases_path: str | None) -> str:
    where = f"the case file {cases_path}" if cases_path else "a case file (--diffperf-cases)"
    return (
        f"scenario {scenario_id!r} has a baseline in {source} but no case definition: "
        f'add {{"id": "{scenario_id}", "model": ..., "task": ..., "prompt": ...}} to the "cases" list of {where}'
    )


def missing_baseline_message(scenario_id: str, baseline_path: str, measurement: Measurement) -> str:
    snippet = json.dumps(entry_from_measurement(measurement), indent=4)
    return f'add this baseline in the "scenarios" section of {baseline_path}:\n\n"{scenario_id}": {snippet}\n'


def measurement_of(samples: Sequence[Sample], case: Case, load_ms: float | None) -> Measurement:
    """The measurement of a scenario's requests (every sample has its perf record), their server CPU time and wait."""
    logged = [s for s in samples if s.record is not None]
    measurement = Measurement.from_records(
        [s.record for s in logged if s.record is not None],
        load_ms=load_ms,
        num_frames=case.num_frames,
        is_video=case.is_video,
    )
    return replace(measurement, cpu_ms=[s.cpu_ms for s in logged], wait_ms=[s.wait_ms for s in logged])


def judged_values(measurement: Measurement, preset: limits.Preset) -> dict[str, float]:
    """e2e, load and the step aggregates as the checks judge them (the preset's statistic over the requests)."""
    values = limits.measured_values(measurement, preset)
    return {key: values[name] for name, key in JUDGED.items() if name in values}


def request_rows(
    scenario_id: str,
    samples: Sequence[Sample],
    measurement: Measurement,
    step_fractions: Sequence[float],
    pair: tuple[Side, int] | None = None,
) -> list[RequestRow]:
    """Each measured request's row; an A/B run's name their side and process pair (``pair``)."""
    load_ms = measurement.load_ms[0] if measurement.load_ms else None
    named = {"side": pair[0], "process_pair": pair[1]} if pair is not None else {}
    rows = []
    for i, sample in enumerate(samples):
        steps = measurement.steps[i]
        snapshots = sample.record.memory_snapshots if sample.record else {}
        rows.append(
            RequestRow(
                **named,
                scenario=scenario_id,
                request=sample.index,
                request_id=sample.output.request_id,
                e2e_ms=measurement.e2e_ms[i],
                client_ms=round(sample.client_ms, 2),
                cpu_ms=sample.cpu_ms,
                wait_ms=sample.wait_ms,
                load_ms=load_ms,
                avg_step_ms=statistics.fmean(steps) if steps else None,
                median_step_ms=statistics.median(steps) if steps else None,
                stages_ms=dict(measurement.stages[i]),
                sampled_steps_ms={str(n): steps[n] for n in limits.step_indices(len(steps), step_fractions)},
                steps_ms=list(steps),
                memory_mb={k: MemoryFigures(**v.model_dump()) for k, v in snapshots.items()},
            )
        )
    return rows


def check_record(r: limits.CheckResult) -> CheckRecord:
    """One judged check as the results file records it."""
    c = r.check
    return CheckRecord(
        name=c.name, kind=c.kind, actual=r.actual, expected=c.expected, limit=c.limit, rel=c.rel, pad=c.pad,
        verdict=r.verdict,
    )  # fmt: skip


def case_rules(rules: limits.JudgeRules, case: Case) -> limits.JudgeRules:
    """The run's rules as ``case`` is judged: e2e and load only without its perf check, its required baselines,
    its SGLang release's step and decoding-stage allowances."""
    kinds = rules.kinds if case.run_perf_check else E2E_AND_LOAD
    preset = limits.with_allowances(rules.preset, case.limit_allowances)
    return replace(rules, kinds=kinds, required=frozenset(case.required_baselines), preset=preset)


def judge_requests(
    scenario_id: str,
    baseline: ScenarioBaseline,
    measurement: Measurement,
    rules: limits.JudgeRules,
    how: Literal["all", "each", "last"] = "all",
) -> ScenarioResult:
    """``judge_limits`` over the requests as the case says (``Case.judged_requests``): the statistic over all of
    them, each on its own (the first failing request's result, named), or the last alone."""
    count = len(measurement.e2e_ms)
    if count < 2 or how == "all":
        return judge_limits(scenario_id, baseline, measurement, rules)
    if how == "last":
        return judge_limits(scenario_id, baseline, measurement.request(-1), rules)
    for index in range(count):
        result = judge_limits(scenario_id, baseline, measurement.request(index), rules)
        if result.verdict == "fail":
            result.message = f"request {index + 1}/{count} (each is judged on its own): {result.message}"
            return result
    return judge_limits(scenario_id, baseline, measurement, rules)


def judge_limits(
    scenario_id: str, baseline: ScenarioBaseline, measurement: Measurement, rules: limits.JudgeRules
) -> ScenarioResult:
    """Every check of the scenario by ``rules`` (``limits.plan_checks``), and its verdict: fail when a check failed
    or is missing."""
    evaluation = limits.assess(baseline, measurement, rules)
    results = evaluation.results
    checks = [check_record(r) for r in results]
    verdicts = {r.verdict for r in results}
    if verdicts & {"fail", "missing"}:
        failing = sum(r.verdict in ("fail", "missing") for r in results)
        table = format_failures(results, limits.samples(measurement), rules.preset.statistic)
        message = f"{PERF_PREFIX} {failing} check(s) failed\n{table}"
        verdict: Outcome = "fail"
    elif "unguarded" in verdicts:
        message = "; ".join(r.message for r in results if r.verdict == "unguarded")
        verdict = "unguarded"
    else:
        message, verdict = "", "pass"
    return ScenarioResult(
        scenario=scenario_id, verdict=verdict, checks=checks, message=message, unreported=evaluation.unreported
    )
