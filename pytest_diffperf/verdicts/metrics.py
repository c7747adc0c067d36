"""What an A/B run measures per request, and how each metric is judged (tolerance, gate, noise prior).

Metric names follow the limit engine's check names: ``e2e``, ``load``, ``avg_denoise``,
``median_denoise``, ``stage[<Name>]``. The defaults are sized from the noise study of tiny
diffusers pipelines on a shared 2-vCPU VM (``docs/verdicts.md``); calibrate the noise priors of
another runner class with :func:`~pytest_diffperf.verdicts.noise.estimate_noise` on A/A runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ..errors import DiffperfError
from ..perf.limits import stage_name
from ..protocol import DENOISING_STAGE, PerfRecord
from .noise import Noise
from .rules import check_band, look_alpha

MetricKind = Literal["e2e", "stage", "denoise_agg", "load"]
E2E, LOAD = "e2e", "load"
DENOISE_AGGREGATES = ("avg_denoise", "median_denoise")
STAGE_PREFIX, STAGE_SUFFIX = stage_name("|").split("|")


def stage_of(metric: str) -> str | None:
    """The stage a metric name times (``stage[X]`` -> ``X``), else None."""
    if metric.startswith(STAGE_PREFIX) and metric.endswith(STAGE_SUFFIX):
        return metric[len(STAGE_PREFIX) : len(metric) - len(STAGE_SUFFIX)]
    return None


def request_metrics(e2e_ms: float, stages_ms: Mapping[str, float], steps_ms: Sequence[float]) -> dict[str, float]:
    """One request's metrics: e2e, each stage, and the mean and median step."""
    out = {E2E: float(e2e_ms)}
    out.update({stage_name(s): float(ms) for s, ms in stages_ms.items()})
    if steps_ms:
        out["avg_denoise"] = statistics.fmean(steps_ms)
        out["median_denoise"] = float(statistics.median(steps_ms))
    return out


def record_metrics(record: PerfRecord, *, e2e_ms: float | None = None) -> dict[str, float]:
    """:func:`request_metrics` of a perf-log record (e2e: the client's when given, else the server's total)."""
    stages = {s.name: s.execution_time_ms for s in record.stages}  # a stage logged twice keeps its last time
    return request_metrics(record.total_duration_ms if e2e_ms is None else e2e_ms, stages, record.steps)


@dataclass(frozen=True)
class MetricSpec:
    """How one metric is judged.

    ``tolerance``: a change the verdict must not call unchanged (relative, 0.10 = 10 %);
    ``floor``: a change below it is never called regressed or improved; ``weight``: the metric's
    share of the scenario's false-alarm budget (0: reported with its own verdict, not gated);
    ``noise``: the prior noise of its per-request-pair log ratio.
    """

    kind: MetricKind
    tolerance: float
    noise: Noise
    floor: float = 0.0
    weight: float = 0.0

    def __post_init__(self) -> None:
        check_band(self.tolerance, self.floor, source=f"{self.kind} metric")
        if not (math.isfinite(self.weight) and self.weight >= 0):
            raise DiffperfError(
                f"expected a weight >= 0, got {self.weight!r}", source=f"{self.kind} metric", key="weight"
            )

    @property
    def gated(self) -> bool:
        return self.weight > 0


# Noise priors from benchmarks/noise-study (ab_flux, ab_sd: 16 A/A sessions; single-process sets for load),
# rounded up: e2e offsets sd 1.5-3.6 %, request pairs 6.4-7.5 % (MAD) / 8.4-9.1 % (sd); denoise 1.9 % / 5.9-8.4 % (MAD) / 9.8 % (sd);
# decode 6.5-11.5 % / 7.6-11.5 %; text encoding up to 12 % / 28 %; fresh-process load time about 13 % per process.
E2E_NOISE = Noise(between=0.04, within=0.09)
DENOISE_NOISE = Noise(between=0.03, within=0.10)
STAGE_NOISE = Noise(between=0.12, within=0.3)
LOAD_NOISE = Noise(between=0.2, within=0.0)
# One server at a time (no interleaving): the noise study's single-process sets (17 Flux, 9 SD processes run one
# after another), request j of one process against request j of another: a process pair's offset has sd 0.19-0.21
# (e2e), 0.20-0.22 (denoise) at m = 1 and 0.17-0.20 at m = 4 (slow phases do not average out), decode 0.15-0.19.
SEQUENTIAL_NOISE = Noise(between=0.2, within=0.1)
SEQUENTIAL_STAGE_NOISE = Noise(between=0.2, within=0.3)
# A busy machine (outside processes over --diffperf-busy-share while a process pair measured): identical builds side by
# side on this 2-vCPU VM beside a full test suite (load 4-5) gave one process pair's e2e log ratio an sd of about 0.36
# at m = 1, against 0.098 from the priors (docs/benchmarks-archive.md, "A/A on a busy machine").
BUSY_NOISE = 4.0


@dataclass(frozen=True)
class VerdictPolicy:
    """Tolerances, gates and noise priors per metric, the scenario's false-alarm budget ``alpha``
    and how it is spent over the looks (``spending``, see :func:`~pytest_diffperf.verdicts.rules.look_alpha`).

    Gated by default: e2e and the denoising stage(s), half the budget each. Other stages, the step
    aggregates and load time get their own verdicts (reported, not gated): on this class of machine
    a +10 % change of a ~100 ms stage is out of reach within 80 requests. ``overrides`` maps a
    metric name to its own spec.
    """

    alpha: float = 0.01
    spending: float = 2.0
    e2e: MetricSpec = MetricSpec("e2e", 0.10, E2E_NOISE, weight=0.5)
    denoising_stage: MetricSpec = MetricSpec("stage", 0.10, DENOISE_NOISE, weight=0.5)
    stage: MetricSpec = MetricSpec("stage", 0.5, STAGE_NOISE)
    denoise_agg: MetricSpec = MetricSpec("denoise_agg", 0.10, DENOISE_NOISE)
    load: MetricSpec = MetricSpec("load", 0.25, LOAD_NOISE)
    overrides: Mapping[str, MetricSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        look_alpha(self.alpha, 1.0, 1, 1, self.spending)  # validates alpha and spending

    def spec(self, metric: str, denoising: Collection[str] = frozenset({DENOISING_STAGE})) -> MetricSpec:
        """The spec of a metric by name (``denoising``: the scenario's denoising stages)."""
        if metric in self.overrides:
            return self.overrides[metric]
        if metric == E2E:
            return self.e2e
        if metric == LOAD:
            return self.load
        if metric in DENOISE_AGGREGATES:
            return self.denoise_agg
        stage = stage_of(metric)
        if stage is None:
            raise ValueError(f"unknown metric {metric!r}")
        return self.denoising_stage if stage in denoising else self.stage


def one_at_a_time(policy: VerdictPolicy) -> VerdictPolicy:
    """``policy`` with the priors of servers run one after the other: no request pair shares a moment, so the
    machine's slow phases land on one side (about twice the side-by-side noise here)."""
    return replace(
        policy,
        e2e=replace(policy.e2e, noise=SEQUENTIAL_NOISE),
        denoising_stage=replace(policy.denoising_stage, noise=SEQUENTIAL_NOISE),
        denoise_agg=replace(policy.denoise_agg, noise=SEQUENTIAL_NOISE),
        stage=replace(policy.stage, noise=SEQUENTIAL_STAGE_NOISE),
    )


def busy_machine(policy: VerdictPolicy, factor: float = BUSY_NOISE) -> VerdictPolicy:
    """``policy`` with every noise prior ``factor`` times wider, weights kept: the priors describe a machine no busier
    than the one they were measured on, so a run measured busy must not borrow their confidence."""

    def wider(spec: MetricSpec) -> MetricSpec:
        return replace(
            spec, noise=replace(spec.noise, between=factor * spec.noise.between, within=factor * spec.noise.within)
        )

    return replace(
        policy,
        e2e=wider(policy.e2e),
        denoising_stage=wider(policy.denoising_stage),
        stage=wider(policy.stage),
        denoise_agg=wider(policy.denoise_agg),
        load=wider(policy.load),
        overrides={name: wider(spec) for name, spec in policy.overrides.items()},
    )
