"""Static mode judged with the run's noise: the limit engine's checks, each timing check as an interval.

The limit engine (:func:`.verdict.judge_limits`) judges the pooled requests of every attempt
as before; its memory checks and missing measurements stay deterministic. Each timing check is
then judged by :mod:`pytest_diffperf.verdicts.static` on its samples per attempt (fresh server):
``fail`` when its whole interval lies above the limit, ``pass`` at or below it, else
``inconclusive``; a check whose limit lies within the noise fresh servers cannot remove is judged
by its point value instead, and its verdict and record say so. Those verdicts replace the engine's
for the timing checks. A failing e2e check
is attributed to the stages as A/B's is (:mod:`pytest_diffperf.verdicts.attribution`), each
stage's change against its stored value with its own interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..perf import limits
from ..perf.measurement import Measurement
from ..perf.schema import ScenarioBaseline
from ..results.model import NoiseRecord, NoisyCheckRecord, ScenarioResult
from ..results.tables import format_failures
from ..verdicts.attribution import Attribution, Change, attribute
from ..verdicts.metrics import stage_of
from ..verdicts.static import StaticPolicy, StaticResult, judge_static_checks, remeasure, scenario_verdict
from .abscenario import attribution_record
from .verdict import PERF_PREFIX, judge_limits


@dataclass(frozen=True)
class NoisyJudgement:
    """The scenario's result and whether to measure it again on a fresh server."""

    result: ScenarioResult
    remeasure: bool


def pooled(attempts: Sequence[Measurement]) -> Measurement:
    """Every attempt's requests as one measurement (load: one value per attempt)."""
    memory: dict[str, list[float]] = {}
    for m in attempts:
        for key, values in m.memory.items():
            memory.setdefault(key, []).extend(values)
    first = attempts[0]
    return Measurement(
        e2e_ms=[x for m in attempts for x in m.e2e_ms],
        steps=[s for m in attempts for s in m.steps],
        stages=[s for m in attempts for s in m.stages],
        denoising_stages=frozenset().union(*(m.denoising_stages for m in attempts)),
        load_ms=[x for m in attempts for x in m.load_ms],
        memory=memory,
        num_frames=first.num_frames,
        is_video=first.is_video,
    )


def judge_noisy(
    scenario_id: str,
    baseline: ScenarioBaseline,
    attempts: Sequence[Measurement],
    rules: limits.JudgeRules,
    policy: StaticPolicy,
    wall_s: float,
) -> NoisyJudgement:
    """Judge the attempts so far by ``rules``, as :func:`.verdict.judge_limits`; ``remeasure`` follows
    :func:`pytest_diffperf.verdicts.static.remeasure`."""
    measurement = pooled(attempts)
    engine = limits.evaluate(baseline, measurement, rules)
    per_attempt = [limits.samples(m) for m in attempts]
    samples = {r.check.name: [a.get(r.check.name, []) for a in per_attempt] for r in engine}
    noisy = judge_static_checks([r.check for r in engine], samples, policy, denoising=measurement.denoising_stages)
    result = judge_limits(scenario_id, baseline, measurement, rules)
    judged = {r.check.name: r for r in noisy}
    fixed = [r for r in engine if not r.passed and r.check.name not in judged]  # memory, missing: deterministic
    verdict = scenario_verdict(noisy) if noisy else "pass"
    requests = len(measurement.e2e_ms)
    attribution = explained(noisy) if "e2e" in judged and judged["e2e"].verdict == "fail" else None
    result.noise = NoiseRecord(
        verdict=verdict,
        attempts=len(attempts),
        requests=requests,
        wall_s=round(wall_s, 2),
        checks=[_record(r) for r in noisy],
        attribution=attribution_record(attribution) if attribution else None,
    )
    cost = f"{len(attempts)} fresh server(s), {requests} requests"
    if fixed or verdict == "fail":
        failing = fixed + [r for r in engine if r.check.name in judged and judged[r.check.name].verdict == "fail"]
        lines = [r.text() for r in noisy if r.verdict == "fail"]
        result.verdict = "fail"
        table = format_failures(failing, limits.samples(measurement), rules.preset.statistic)
        result.message = f"{PERF_PREFIX} {len(failing)} check(s) failed ({cost})\n{table}"
        result.message += "".join(f"\n  {line}" for line in lines)
        if attribution is not None:
            result.message += f"\n  against the stored baseline: {attribution.text()}"
    elif verdict == "inconclusive":
        lines = [r.text() for r in noisy if r.verdict == "inconclusive"]
        result.verdict = "inconclusive"
        result.message = (
            f"{PERF_PREFIX} inconclusive ({cost}): the run's noise supports neither a pass nor a fail "
            "at these limits" + "".join(f"\n  {line}" for line in lines)
        )
    elif result.verdict == "fail":  # the engine failed only timing checks, which the intervals pass
        result.verdict, result.message = "pass", ""
    if result.message and (point := [r.check.name for r in noisy if r.point]):
        result.message += f"\n  judged by point value (each limit within the noise): {', '.join(point)}"
    go_on = not fixed and remeasure(noisy, len(attempts), policy, denoising=measurement.denoising_stages)
    return NoisyJudgement(result, go_on)


def explained(results: Sequence[StaticResult]) -> Attribution | None:
    """e2e's change against the stored baseline, attributed to the stages (None without an e2e result)."""
    changes = {r.check.name: _change(r) for r in results if r.check.name == "e2e" or stage_of(r.check.name)}
    e2e = changes.pop("e2e", None)
    if e2e is None:
        return None
    return attribute(e2e, {str(stage_of(name)): c for name, c in changes.items()})


def _change(r: StaticResult) -> Change:
    low, high = math.log(r.low / r.check.expected), math.log(r.high / r.check.expected)
    return Change(
        math.exp((low + high) / 2),
        r.low / r.check.expected,
        r.high / r.check.expected,
        (high - low) / (2 * r.z),
        r.check.expected,
    )


def _record(r: StaticResult) -> NoisyCheckRecord:
    c = r.check
    return NoisyCheckRecord(
        name=c.name,
        actual=round(r.actual, 2),
        low=round(r.low, 2),
        high=round(r.high, 2),
        expected=c.expected,
        limit=c.limit,
        verdict=r.verdict,
        processes=r.processes,
        requests=r.requests,
        judged_by="point value" if r.point else "interval",
    )
