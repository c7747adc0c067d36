"""Judging scenarios A/B: the adaptive design over fresh server pairs, and each scenario's ``ScenarioResult``.

:class:`GroupAB` drives :class:`pytest_diffperf.serving.abservers.ABServers` process pair by
process pair for a server group's scenarios (or one scenario alone); each scenario stops as soon
as its verdict is decisive, or when its budget is spent. Timing verdicts map onto the scenario's: ``regressed`` fails, ``improved`` and
``unchanged`` pass, ``inconclusive`` stays inconclusive. Memory peaks do not jitter: the
candidate's are checked deterministically against the base's with the profile's tolerances and
the one limit formula.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ..cases import Case
from ..perf import limits
from ..perf.entry import entry_from_measurement
from ..perf.measurement import Measurement
from ..perf.schema import ScenarioBaseline
from ..results.model import (
    ABMetricRecord,
    ABRecord,
    AttributionRecord,
    MeasurementRecord,
    Outcome,
    ScenarioResult,
    StageShareRecord,
)
from ..results.tables import format_failures
from ..serving.abservers import ABServers, PairRun, PairWork
from ..serving.client import Output
from ..serving.interference import Interference, Watch
from ..serving.measure import Sample
from ..verdicts.abstats import ABResult, MetricResult, ProcessPairSamples, Sequential
from ..verdicts.attribution import Attribution
from ..verdicts.design import ABDesign
from ..verdicts.metrics import E2E, LOAD, VerdictPolicy, record_metrics
from ..verdicts.noise import NoiseEstimate, estimate_noise
from ..verdicts.vocab import SIDES, Side, Verdict
from .interference import ab_interference
from .verdict import PERF_PREFIX, check_record, request_rows

SCENARIO_VERDICT: dict[Verdict, Outcome] = {
    "regressed": "fail",
    "improved": "pass",
    "unchanged": "pass",
    "inconclusive": "inconclusive",
}


@dataclass(frozen=True)
class ABScenario:
    """What the item needs back: the result and the candidate's first output (for the consistency check)."""

    result: ScenarioResult
    output: Output | None


def design_for(design: ABDesign, scenario_id: str) -> ABDesign:
    """The design with a seed of the scenario's own: reruns repeat its orders, scenarios differ."""
    return replace(design, seed=zlib.crc32(f"{design.seed}:{scenario_id}".encode()))


@dataclass
class _Scenario:
    case: Case
    timeout: float
    run: Sequential
    runs: list[PairRun] = field(default_factory=list)
    windows: list[Interference] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass
class GroupAB:
    """A server group's scenarios judged A/B over shared process pairs.

    Process pair ``i`` serves every scenario of the group still open its warmups and ``m`` request
    pairs (each scenario its own orders, :func:`design_for`); after it, each scenario's own stop rule
    (``verdicts.abstats.Sequential``) decides whether it needs pair ``i + 1``, so each scenario sees
    the same consecutive fresh process pairs it would see alone. The pairs start in the group's
    start order (the design seeded by ``key``); up to ``prestart`` pairs may be started ahead of the
    one measuring, as many as its open scenarios are projected to need
    (:func:`~pytest_diffperf.verdicts.abstats.projected_pairs`; the minimum before their first look): while it
    measures when the slots have devices of their own (``separate``), else together with it, all of them ready
    before any measures. :meth:`judge` drives the pairs until
    its scenario stops; the next item's scenario often has its result already. ``watch`` (when given)
    meters what outside processes take while each pair measures; a scenario gets its own pairs' windows and,
    from the first busy one on, is judged with the busy machine's priors (``verdicts.metrics.busy_machine``).
    """

    key: str
    servers: ABServers
    design: ABDesign
    policy: VerdictPolicy
    prestart: int = 0
    separate: bool = False
    watch: Watch | None = None
    _scenarios: dict[str, _Scenario] = field(default_factory=dict)
    _next: int = 0  # the next process pair to measure
    _spawned: int = 0  # process pairs begun so far
    _started: float | None = None
    _error: Exception | None = None

    def add(self, scenario_id: str, case: Case, timeout: float) -> None:
        """A scenario of the group (before the first pair measures)."""
        run = Sequential(design_for(self.design, scenario_id), self.policy)
        self._scenarios[scenario_id] = _Scenario(case, timeout, run)

    @property
    def open(self) -> list[str]:
        return [sid for sid, s in self._scenarios.items() if s.run.result is None]

    def judge(self, scenario_id: str, rules: limits.JudgeRules) -> ABScenario:
        """Measure process pairs until ``scenario_id`` stops (a failure of a pair it shared: raised), and judge it
        (with what outside processes took while its pairs measured: ``interference.ab_interference``)."""
        scenario = self._scenarios[scenario_id]
        while scenario.run.result is None:
            if self._error is not None:
                raise self._error
            try:
                self._measure_next()
            except Exception as exc:
                self._error = exc  # every scenario still open shared the pair that failed
                self.close()
                raise
        if not self.open:
            self.close()
        ab, runs = scenario.run.result, scenario.runs
        shared = sorted(sid for sid, s in self._scenarios.items() if sid != scenario_id and s.runs)
        judged = scenario_result(scenario_id, ab, runs, self.servers, scenario.case, scenario.wall_s, shared, rules)
        if self.watch is not None:
            ab_interference(judged.result, scenario.windows, self.watch.policy, self.servers.mode == "together")
        # each side's entry comes from its own rows; no wall time of a single server to estimate the test's from
        judged.result.measurement = MeasurementRecord(
            num_frames=scenario.case.num_frames, is_video=scenario.case.is_video
        )
        return judged

    def _measure_next(self) -> None:
        index, open_ids = self._next, self.open
        if self._started is None:
            self._started = time.monotonic()
        pending = [self._scenarios[sid].run for sid in open_ids]
        budget = max(run.design.process_pair_budget for run in pending)
        # the pairs in all the open scenarios are projected to need (the minimum before their first look)
        need = max(run.last.projected_pairs if run.last else run.design.min_process_pairs for run in pending)
        group = design_for(self.design, self.key)
        last = min(index + self.prestart, max(need, index + 1) - 1, budget - 1)  # the last pair to start by now
        if self.separate or self._spawned <= index:  # separate: ahead of this one; shared: the next batch
            for ahead in range(index, last + 1):
                self.servers.spawn(ahead, group.start_order(ahead))
            self._spawned = max(self._spawned, last + 1)
        if not self.separate:
            for ahead in range(index + 1, self._spawned):  # sharing the devices: no start in flight while measuring
                self.servers.wait(ahead)
        scenarios = [self._scenarios[sid] for sid in open_ids]
        work = [PairWork(s.case, s.run.design.orders(index), s.timeout) for s in scenarios]
        meter = self.watch.meter(self.servers.spec.num_gpus) if self.watch is not None else None
        runs = self.servers.measure_pair(index, work, group.start_order(index))
        window = meter.stop() if meter is not None else None
        busy = window is not None and self.watch is not None and self.watch.policy.busy(window)
        self._next += 1
        for scenario, run in zip(scenarios, runs, strict=True):
            scenario.runs.append(run)
            if window is not None:
                scenario.windows.append(window)
            if scenario.run.add(pair_samples(run), busy=busy) is not None:
                scenario.wall_s = time.monotonic() - self._started

    def close(self) -> None:
        """Stop every server of the group's pairs (one started ahead and not needed included)."""
        self.servers.close()


def scenario_result(
    scenario_id: str,
    ab: ABResult,
    runs: Sequence[PairRun],
    servers: ABServers,
    case: Case,
    wall_s: float,
    shared: Sequence[str],
    rules: limits.JudgeRules,
) -> ABScenario:
    """A scenario's result from its A/B verdict and what its process pairs measured (memory: the limit formula)."""
    side = {s: measurement(runs, s, case) for s in ("base", "candidate")}
    memory = memory_checks(side["base"], side["candidate"], rules)
    record = ab_record(ab, servers, wall_s, runs, shared)
    failing = [r for r in memory if not r.passed]
    verdict = "fail" if failing else SCENARIO_VERDICT[ab.verdict]
    message = ""
    if verdict != "pass":
        message = f"{PERF_PREFIX} {record.headline} (A/B against the base: {servers.sides['base'].spec.text})"
        message += "".join(f"\n  {m.text()}" for m in ab.metrics.values() if m.gated)
        if failing:
            message += f"\n  memory against the base's peaks:\n{format_failures(failing)}"
    result = ScenarioResult(
        scenario=scenario_id,
        verdict=verdict,
        checks=[check_record(r) for r in memory],
        measured=measured(ab, wall_s),
        message=message,
        ab=record,
    )
    result.rows = [
        row
        for pair in runs
        for s in SIDES
        for row in request_rows(
            scenario_id, pair.samples[s], _measurement(pair.samples[s], case, pair.load_ms[s]), rules.step_fractions,
            (s, pair.index),
        )
    ]  # fmt: skip
    first = runs[0].samples["candidate"] if runs else []
    return ABScenario(result, first[0].output if first else None)


def pair_samples(pair: PairRun) -> ProcessPairSamples:
    """One process pair's requests as the verdict statistics read them (e2e: the server's own)."""
    records = {s: [x.record for x in pair.samples[s] if x.record is not None] for s in ("base", "candidate")}
    denoising = frozenset().union(*(Measurement.from_records(r).denoising_stages for r in records.values()))
    return ProcessPairSamples(
        base=[record_metrics(r) for r in records["base"]],
        candidate=[record_metrics(r) for r in records["candidate"]],
        base_load_ms=pair.load_ms.get("base"),
        candidate_load_ms=pair.load_ms.get("candidate"),
        denoising=denoising,
    )


def _measurement(samples: Sequence[Sample], case: Case, load_ms: float | None) -> Measurement:
    records = [s.record for s in samples if s.record is not None]
    return Measurement.from_records(records, load_ms=load_ms, num_frames=case.num_frames, is_video=case.is_video)


def measurement(runs: Sequence[PairRun], side: Side, case: Case) -> Measurement:
    """Every request one side measured, over all its servers (load: one value per server)."""
    records = [s.record for pair in runs for s in pair.samples[side] if s.record is not None]
    one = Measurement.from_records(records, num_frames=case.num_frames, is_video=case.is_video)
    loads = [ms for pair in runs if (ms := pair.load_ms.get(side)) is not None]
    return replace(one, load_ms=loads)


def memory_checks(base: Measurement, candidate: Measurement, rules: limits.JudgeRules) -> list[limits.CheckResult]:
    """The candidate's memory peaks against the base's (the base's as the baseline), by the limit formula."""
    if not base.e2e_ms or not candidate.e2e_ms:
        return []
    baseline = ScenarioBaseline.model_validate(entry_from_measurement(base))
    results = limits.evaluate(baseline, candidate, rules)
    return [r for r in results if r.check.unit == "MiB"]


def ab_record(
    ab: ABResult, servers: ABServers, wall_s: float, runs: Sequence[PairRun], shared: Sequence[str] = ()
) -> ABRecord:
    pairs = [pair_samples(run) for run in runs]
    metrics = [_metric_record(m) for m in ab.metrics.values()]
    for m in metrics:
        estimate = run_noise(pairs, m.name)
        if estimate is not None:
            m.between, m.within = round(estimate.between, 4), round(estimate.within, 4)
    return ABRecord(
        verdict=ab.verdict,
        headline=f"{ab.text()}, {wall_s:.0f} s",
        base=servers.sides["base"].spec.text,
        candidate=servers.sides["candidate"].spec.text,
        process_pairs=ab.process_pairs,
        requests=ab.requests,
        wall_s=round(wall_s, 2),
        stop=ab.stop,
        metrics=metrics,
        attribution=attribution_record(ab.attribution) if ab.attribution is not None else None,
        servers=[server for run in runs for server in run.servers],
        shared_with=list(shared),
        busy_pairs=ab.busy_pairs,
    )


def run_noise(pairs: Sequence[ProcessPairSamples], name: str) -> NoiseEstimate | None:
    """A metric's between- and within-pair noise in this run (None before two process pairs measured it)."""
    if name == LOAD:
        logs = [
            [math.log(p.candidate_load_ms / p.base_load_ms)]
            for p in pairs
            if p.base_load_ms and p.candidate_load_ms and p.base_load_ms > 0 and p.candidate_load_ms > 0
        ]
    else:
        logs = [
            [
                math.log(c[name] / b[name])
                for b, c in zip(p.base, p.candidate, strict=True)
                if b.get(name, 0) > 0 and c.get(name, 0) > 0
            ]
            for p in pairs
        ]
    logs = [x for x in logs if x]
    return estimate_noise(logs) if len(logs) >= 2 else None


def measured(ab: ABResult, wall_s: float) -> dict[str, float]:
    """The figures JUnit carries: the candidate's and base's e2e medians, its ratio and interval, the cost."""
    out = {
        "ab_requests": float(ab.requests),
        "ab_process_pairs": float(ab.process_pairs),
        "ab_wall_s": round(wall_s, 2),
    }
    e2e = ab.metrics.get(E2E)
    if e2e is not None:
        values = {
            "e2e_ms": e2e.candidate_ms,
            "base_e2e_ms": e2e.base_ms,
            "e2e_ratio": e2e.ratio,
            "e2e_ratio_low": e2e.low,
            "e2e_ratio_high": e2e.high,
        }
        out.update({k: round(v, 4) for k, v in values.items() if math.isfinite(v)})
    return out


def _f(x: float) -> float | None:
    return round(x, 6) if math.isfinite(x) else None  # 6: the headline's 0.1 % figures and the record's agree


def _metric_record(m: MetricResult) -> ABMetricRecord:
    return ABMetricRecord(
        name=m.name,
        gated=m.gated,
        tolerance=m.tolerance,
        ratio=_f(m.ratio),
        low=_f(m.low),
        high=_f(m.high),
        verdict=m.verdict,
        base_ms=_f(m.base_ms),
        candidate_ms=_f(m.candidate_ms),
        process_pairs=m.process_pairs,
        request_pairs=m.request_pairs,
        noisier_than_prior=m.noisier_than_prior,
    )


def attribution_record(a: Attribution) -> AttributionRecord:
    stages = [
        StageShareRecord(
            stage=s.stage,
            ratio=_f(s.ratio),
            low=_f(s.low),
            high=_f(s.high),
            delta_ms=_f(s.delta_ms),
            share=_f(s.share),
            named=s.named,
        )
        for s in a.stages
    ]
    return AttributionRecord(
        ratio=_f(a.ratio), low=_f(a.low), high=_f(a.high), delta_ms=_f(a.delta_ms), named=list(a.named), stages=stages
    )
