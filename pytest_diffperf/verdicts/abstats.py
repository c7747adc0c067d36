"""A/B analysis: per-metric ratios, intervals and verdicts, the scenario's verdict and its stage attribution.

:func:`judge_ab_metrics` does the work on arrays (leading axes: runs, e.g. a benchmark's trials);
:func:`analyse` is the same for one run of :class:`ProcessPairSamples`; :class:`Sequential` applies an
:class:`~pytest_diffperf.verdicts.design.ABDesign`'s stop rule pair by pair, and :func:`run` drives it with a
callback that measures one process pair.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from ..protocol import DENOISING_STAGE
from .attribution import Attribution, Change, attribute, percent, span
from .design import ABDesign
from .interval import estimate
from .metrics import BUSY_NOISE, E2E, LOAD, MetricKind, MetricSpec, VerdictPolicy, busy_machine, stage_of
from .noise import FloatArray, nanmedian
from .rules import CodeArray, classify, combine, decisive, look_alpha, z_value
from .vocab import VERDICTS, Order, StopReason, Verdict

NOISY = 1.5  # a run whose within-pair spread exceeds its prior's by this factor is flagged
MIN_NOISE_DOF = 6  # ... once it has this many degrees of freedom to show it


def noisier_than_prior(within: FloatArray, within_dof: FloatArray, prior: float) -> NDArray[np.bool_]:
    """The run's request pairs scatter more than the calibration assumed (its false-alarm rate may exceed alpha)."""
    return np.asarray((np.asarray(within_dof) >= MIN_NOISE_DOF) & (np.asarray(within) > NOISY * prior), dtype=np.bool_)


@dataclass(frozen=True)
class Judgement:
    """Every metric's log ratio, interval and verdict code, and the scenario's code; arrays over runs."""

    specs: Mapping[str, MetricSpec]
    log_ratio: Mapping[str, FloatArray]
    se: Mapping[str, FloatArray]
    low: Mapping[str, FloatArray]
    high: Mapping[str, FloatArray]
    codes: Mapping[str, CodeArray]
    scenario: CodeArray
    process_pairs: Mapping[str, FloatArray]
    request_pairs: Mapping[str, FloatArray]
    within: Mapping[str, FloatArray]
    within_dof: Mapping[str, FloatArray]


def metric_z(policy: VerdictPolicy, spec: MetricSpec, gated_weight: float, looks: int, look: int) -> float:
    """The interval's ``z`` for a metric at a look: its share of ``alpha`` (all of it when not gated)."""
    share = spec.weight / gated_weight if spec.gated else 1.0
    return z_value(look_alpha(policy.alpha, share, looks, look, policy.spending))


def judge_ab_metrics(
    log_ratios: Mapping[str, FloatArray],
    policy: VerdictPolicy,
    design: ABDesign,
    denoising: Collection[str] = frozenset({DENOISING_STAGE}),
) -> Judgement:
    """Judge log ratios ``(..., process_pairs, request_pairs)`` per metric name, at the look their process pairs make."""
    specs = {name: policy.spec(name, denoising) for name in log_ratios}
    done = max((np.shape(d)[-2] for d in log_ratios.values()), default=1)
    look = min(max(done - design.min_process_pairs + 1, 1), design.looks)
    gated_weight = sum(s.weight for s in specs.values() if s.gated)
    est, se, low, high, codes, k, n, within, dof = {}, {}, {}, {}, {}, {}, {}, {}, {}
    for name, d in log_ratios.items():
        spec = specs[name]
        e = estimate(d, spec.noise)
        low[name], high[name] = e.bounds(metric_z(policy, spec, gated_weight, design.looks, look))
        est[name], se[name], k[name], n[name] = e.log_ratio, e.se, e.process_pairs, e.request_pairs
        within[name], dof[name] = e.within, e.within_dof
        codes[name] = classify(low[name], high[name], spec.tolerance, spec.floor)
    gated = [codes[name] for name, spec in specs.items() if spec.gated]
    shape = np.shape(next(iter(est.values()))) if est else ()
    stacked = np.stack(gated, axis=-1) if gated else np.zeros((*shape, 0), dtype=np.int8)
    return Judgement(specs, est, se, low, high, codes, combine(stacked), k, n, within, dof)


def projected_pairs(j: Judgement, policy: VerdictPolicy, design: ABDesign, done: int) -> int:
    """The process pairs in all after which one run's verdict is projected to be decisive: the first look at which
    every gated metric's interval, its estimate and per-pair variance held as they are now (its ``se`` shrinking as
    ``1 / sqrt(pairs)``), would decide the scenario; the budget when no look within it would. It sizes the batch of
    process pairs started together and never enters a verdict."""
    budget = design.process_pair_budget
    if done >= budget:
        return budget
    totals = np.arange(max(done, design.min_process_pairs - 1) + 1, budget + 1)
    looks = np.clip(totals - design.min_process_pairs + 1, 1, design.looks)
    gated = {name: spec for name, spec in j.specs.items() if spec.gated}
    weight = sum(spec.weight for spec in gated.values())
    codes = []
    for name, spec in gated.items():
        est, se, k = (float(np.asarray(x)) for x in (j.log_ratio[name], j.se[name], j.process_pairs[name]))
        if not (k > 0 and math.isfinite(est) and math.isfinite(se)):
            return budget
        z = np.array([metric_z(policy, spec, weight, design.looks, int(look)) for look in looks])
        half = z * se * np.sqrt(k / totals)
        codes.append(classify(est - half, est + half, spec.tolerance, spec.floor))
    if not codes:
        return budget
    decided = np.flatnonzero(decisive(combine(np.stack(codes, axis=-1))))
    return int(totals[decided[0]]) if decided.size else budget


@dataclass(frozen=True)
class ProcessPairSamples:
    """What one fresh base/candidate server pair measured: request pair ``j`` is ``(base[j], candidate[j])``.

    Each request maps metric names (see :mod:`~pytest_diffperf.verdicts.metrics`) to ms; a metric
    missing on either side leaves that request pair out of it. Load times are once per process.
    ``denoising``: the stages the servers' records flag as denoising (empty: the caller's default).
    """

    base: Sequence[Mapping[str, float]]
    candidate: Sequence[Mapping[str, float]]
    base_load_ms: float | None = None
    candidate_load_ms: float | None = None
    denoising: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if len(self.base) != len(self.candidate):
            raise ValueError(f"{len(self.base)} base requests but {len(self.candidate)} candidate requests")

    @property
    def requests(self) -> int:
        return len(self.base) + len(self.candidate)


@dataclass(frozen=True)
class MetricResult:
    """One metric's candidate/base ratio, its interval and verdict."""

    name: str
    kind: MetricKind
    gated: bool
    tolerance: float
    ratio: float
    low: float
    high: float
    se: float  # standard error of log(ratio)
    verdict: Verdict
    base_ms: float  # median of the base requests (per process for load)
    candidate_ms: float
    process_pairs: int
    request_pairs: int
    within: float  # the run's own within-pair sd of log(ratio), on within_dof degrees of freedom
    within_dof: int
    within_prior: float

    @property
    def noisier_than_prior(self) -> bool:
        """See :func:`noisier_than_prior`."""
        return bool(noisier_than_prior(_a(self.within), _a(self.within_dof), self.within_prior))

    @property
    def label(self) -> str:
        """The name to show: a stage's own name, else the metric's."""
        return stage_of(self.name) or self.name

    def text(self) -> str:
        gate = "" if self.gated else ", not gated"
        return (
            f"{self.label} {percent(self.ratio)} {span(self.low, self.high)}: {self.verdict} "
            f"(tolerance {self.tolerance:.0%}{gate}; {self.base_ms:.2f} -> {self.candidate_ms:.2f} ms)"
        )


@dataclass(frozen=True)
class ABResult:
    """A scenario's A/B verdict, every metric's result and the stage attribution of e2e's change."""

    verdict: Verdict
    metrics: Mapping[str, MetricResult]
    attribution: Attribution | None
    process_pairs: int
    requests: int
    stop: StopReason | None = None
    busy_pairs: int = 0  # process pairs measured on a busy machine: judged with the priors BUSY_NOISE times wider
    projected_pairs: int = 0  # the process pairs in all it is projected to need (:func:`projected_pairs`)

    def text(self) -> str:
        """The headline: the verdict, then the metrics that decided it. e2e leads when its own verdict is the
        scenario's (with the named stages when it changed); else the decisive gated metrics lead and e2e follows
        with its own verdict, so that ``regressed: e2e ...`` never labels an inconclusive e2e."""
        head = f"{self.verdict}: "
        decisive = [
            f"{m.label} {percent(m.ratio)} {span(m.low, m.high)} {m.verdict}"
            for m in self.metrics.values()
            if m.gated
            and m.name != E2E
            and (m.verdict in ("regressed", "improved") or m.verdict == self.verdict)
            and m.verdict != "unchanged"
        ]
        e2e = self.metrics.get(E2E)
        own = "" if e2e is None or e2e.verdict == self.verdict else e2e.verdict
        e2e_part = ""
        if self.attribution is not None and self.verdict in ("regressed", "improved"):
            e2e_part = self.attribution.text(own)
        elif e2e is not None:
            e2e_part = f"e2e {percent(e2e.ratio)} {span(e2e.low, e2e.high)}" + (f" {own}" if own else "")
        parts = [e2e_part, *decisive] if not own or not decisive else [*decisive, e2e_part]
        parts = [p for p in parts if p]
        budget = f" ({self.process_pairs} process pair(s), {self.requests} requests"
        budget += f", stopped: {self.stop})" if self.stop else ")"
        noisy = [m for m in self.metrics.values() if m.gated and m.noisier_than_prior]
        warning = "".join(
            f"; {m.label} noisier than calibrated (within {m.within:.3f} > {NOISY:g} x prior {m.within_prior:.3f})"
            for m in noisy
        )
        busy = f"; {self.busy_pairs} measured busy: noise priors x{BUSY_NOISE:g}" if self.busy_pairs else ""
        return head + "; ".join(parts) + budget + warning + busy


@dataclass(frozen=True)
class _Metric:
    log_ratios: FloatArray  # (process_pairs, request_pairs), NaN: missing
    base: list[float]
    candidate: list[float]


def _metrics(pairs: Sequence[ProcessPairSamples]) -> dict[str, _Metric]:
    """Each metric's log ratios and the base and candidate values that went into them."""
    names = sorted({name for p in pairs for request in (*p.base, *p.candidate) for name in request})
    width = max((len(p.base) for p in pairs), default=1) or 1
    out: dict[str, _Metric] = {}
    for name in names:
        metric = _Metric(np.full((len(pairs), width), np.nan), [], [])
        for i, p in enumerate(pairs):
            for j, (b, c) in enumerate(zip(p.base, p.candidate, strict=True)):
                _add(metric, i, j, b.get(name), c.get(name))
        out[name] = metric
    if any(p.base_load_ms is not None and p.candidate_load_ms is not None for p in pairs):
        load = _Metric(np.full((len(pairs), 1), np.nan), [], [])
        for i, p in enumerate(pairs):
            _add(load, i, 0, p.base_load_ms, p.candidate_load_ms)
        out[LOAD] = load
    return out


def _add(metric: _Metric, i: int, j: int, base: float | None, candidate: float | None) -> None:
    if base is not None and candidate is not None and _positive(base) and _positive(candidate):
        metric.log_ratios[i, j] = math.log(candidate / base)
        metric.base.append(base)
        metric.candidate.append(candidate)


def _a(x: float) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _positive(x: float) -> bool:
    return math.isfinite(x) and x > 0


def analyse(
    pairs: Sequence[ProcessPairSamples],
    design: ABDesign,
    policy: VerdictPolicy | None = None,
    *,
    denoising: Collection[str] = frozenset({DENOISING_STAGE}),
) -> ABResult:
    """The A/B verdict of the process pairs measured so far (``design`` sets the looks the budget allows).

    The denoising stages are those the pairs flag, else ``denoising``.
    """
    policy = VerdictPolicy() if policy is None else policy
    denoising = frozenset().union(*(p.denoising for p in pairs)) or denoising
    measured = _metrics(pairs)
    j = judge_ab_metrics({name: m.log_ratios for name, m in measured.items()}, policy, design, denoising)
    metrics: dict[str, MetricResult] = {}
    for name, spec in j.specs.items():
        base, cand = measured[name].base, measured[name].candidate
        metrics[name] = MetricResult(
            name=name,
            kind=spec.kind,
            gated=spec.gated,
            tolerance=spec.tolerance,
            ratio=math.exp(float(j.log_ratio[name])),
            low=math.exp(float(j.low[name])),
            high=math.exp(float(j.high[name])),
            se=float(j.se[name]),
            verdict=VERDICTS[int(j.codes[name])],
            base_ms=float(np.median(base)) if base else math.nan,
            candidate_ms=float(np.median(cand)) if cand else math.nan,
            process_pairs=int(j.process_pairs[name]),
            request_pairs=int(j.request_pairs[name]),
            within=float(j.within[name]),
            within_dof=int(j.within_dof[name]),
            within_prior=spec.noise.within,
        )
    return ABResult(
        verdict=VERDICTS[int(j.scenario)],
        metrics=metrics,
        attribution=_attribution(metrics),
        process_pairs=len(pairs),
        requests=sum(p.requests for p in pairs),
        projected_pairs=projected_pairs(j, policy, design, len(pairs)),
    )


def _attribution(metrics: Mapping[str, MetricResult]) -> Attribution | None:
    e2e = metrics.get(E2E)
    if e2e is None or math.isnan(e2e.ratio):
        return None
    stages = {
        stage: _change(m)
        for name, m in metrics.items()
        if (stage := stage_of(name)) is not None and not math.isnan(m.ratio)
    }
    return attribute(_change(e2e), stages)


def _change(m: MetricResult) -> Change:
    return Change(m.ratio, m.low, m.high, m.se, m.base_ms)


def base_levels(base_values: FloatArray) -> FloatArray:
    """The base median of a metric from its base values ``(..., process_pairs, request_pairs)`` (the benchmark's path)."""
    shape = np.shape(base_values)
    return nanmedian(np.reshape(base_values, (*shape[:-2], -1)), axis=-1)


Measure = Callable[[int, tuple[Order, ...], Order], ProcessPairSamples]


@dataclass
class Sequential:
    """One scenario's adaptive run, one process pair at a time: :meth:`add` analyses and applies the stop rule.

    The orchestrator measures process pair ``len(pairs)`` with ``design.orders`` of it while ``result``
    is None. Scenarios of a server group that share process pairs each keep their own.
    """

    design: ABDesign
    policy: VerdictPolicy | None = None
    denoising: Collection[str] = frozenset({DENOISING_STAGE})
    pairs: list[ProcessPairSamples] = field(default_factory=list)
    result: ABResult | None = None  # set once the stop rule stops
    last: ABResult | None = None  # the latest analysis, stopped or not
    busy_pairs: int = 0

    def add(self, pair: ProcessPairSamples, *, busy: bool = False) -> ABResult | None:
        """Add the next process pair's samples; the result once the scenario stops (None: it needs another).

        From the first pair measured ``busy`` on, every look is judged with :func:`busy_machine`'s priors.
        """
        if self.result is not None:
            raise ValueError("the scenario has stopped")
        self.pairs.append(pair)
        self.busy_pairs += busy
        policy = self.policy or VerdictPolicy()
        if self.busy_pairs:
            policy = busy_machine(policy)
        result = self.last = analyse(self.pairs, self.design, policy, denoising=self.denoising)
        decision = self.design.decide(len(self.pairs), result.verdict)
        if decision.stop:
            self.result = replace(result, stop=decision.reason, busy_pairs=self.busy_pairs)
        return self.result


def run(
    design: ABDesign,
    measure: Measure,
    policy: VerdictPolicy | None = None,
    *,
    denoising: Collection[str] = frozenset({DENOISING_STAGE}),
) -> ABResult:
    """Drive the adaptive design: ``measure(process_pair, orders, start_order)`` runs one process pair.

    The orchestrator's callback starts a fresh base and candidate server (``start_order[0]``
    first), sends the request pairs in ``orders`` and returns what they measured.
    """
    scenario = Sequential(design, policy, denoising)
    while True:
        index = len(scenario.pairs)
        result = scenario.add(measure(index, design.orders(index), design.start_order(index)))
        if result is not None:
            return result
