"""What one scenario produced, as the results file stores it: typed verdicts and one overall outcome.

The performance verdict and the consistency status are judged separately; ``outcome`` combines
them into the one word the summary table, JUnit, ``diffperf merge`` and every exit code use.
An A/B run (``--diffperf-base``) adds its ratios, intervals, verdicts and stage attribution
(``ab``); a static run judged with the run's noise adds each timing check's interval (``noise``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..consistency.result import Status as ConsistencyStatus
from ..perf.limits import CheckKind, CheckVerdict
from ..serving.record import ServerRecord
from ..verdicts.vocab import StaticVerdict, StopReason, Verdict
from .rows import RequestRow

# 2: "case" became "scenario"; every scenario carries its outcome.
# 3: what a baseline entry is built from (``diffperf accept``): each request row's own server load, and each
#    scenario's ``measurement`` (frames, wall time, its share of the server's start).
# 4: a consistency status says ``pass`` and ``fail``, as every other outcome does (before: passed, failed).
# 5: each scenario's ``unreported``: the memory checks its baseline asks for that the server reported no figure for.
# 6: each request row's ``cpu_ms`` and ``wait_ms``: the server's processes' CPU time over the request, and their
#    threads' time waiting for a CPU.
RESULTS_VERSION = 6
READABLE_VERSIONS = (2, 3, 4, 5, 6)  # merged, compared and followed in a history; accepted from 3 on
ENTRY_VERSION = 3  # the first version whose files carry the figures of a baseline entry
STATUS_VERSION = 4  # the first version whose consistency statuses say pass and fail
CONSISTENCY_STATUSES: tuple[ConsistencyStatus, ...] = get_args(ConsistencyStatus)
# read from files before STATUS_VERSION
OLD_STATUSES: dict[str, ConsistencyStatus] = {"passed": "pass", "failed": "fail"}

# A scenario's performance verdict, and its outcome (performance and consistency together): one vocabulary.
# "inconclusive": the evidence supports neither a pass nor a fail; "fail" and "error" fail the run; whether
# "inconclusive" does is the run's choice (--diffperf-inconclusive), it is never counted as a pass or a fail.
Outcome = Literal["pass", "fail", "inconclusive", "error", "skipped", "unguarded", "unjudged"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
FAILING: frozenset[Outcome] = frozenset({"fail", "error"})
InconclusiveMode = Literal["report", "fail"]  # --diffperf-inconclusive, recorded in the results file
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


def fails_run(outcome: Outcome, inconclusive: InconclusiveMode) -> bool:
    """Whether an outcome fails the run: "fail" and "error" always, "inconclusive" when the run says so."""
    return outcome in FAILING or (outcome == "inconclusive" and inconclusive == "fail")


def nothing_judged(results: Sequence[ScenarioResult]) -> bool:
    """Whether a run (or a merge of runs) judged nothing: no scenario, or every one skipped (unfit, not
    expressible, a dry run): green would claim what was never checked."""
    return all(r.outcome == "skipped" for r in results)


def skipped_line(results: Sequence[ScenarioResult]) -> str:
    """Why the scenarios were skipped, the commonest reason first: ``5 needs 2 devices, 2 dry run``."""
    reasons = Counter(_reason_kind(r) for r in results if r.outcome == "skipped")
    return ", ".join(f"{n} {why}" for why, n in reasons.most_common())


def _reason_kind(result: ScenarioResult) -> str:
    """A skip reason without its scenario's name (``flux: needs 2 devices ...`` -> ``needs 2 devices ...``)."""
    why = (result.message or "skipped").removeprefix(f"{result.scenario}: ")
    return why.split(";")[0].split(" (")[0].strip() or "skipped"


def combine(verdict: Outcome, consistency: ConsistencyStatus | None) -> Outcome:
    """The overall outcome of a performance verdict and a consistency status (None: not compared)."""
    compared = consistency not in (None, "skipped")
    if verdict == "error":
        return "error"
    if verdict == "fail" or consistency == "fail":
        return "fail"
    if verdict in ("skipped", "unjudged") and not compared:
        return verdict
    if verdict in ("inconclusive", "unguarded"):
        return verdict
    return "pass"


class CheckRecord(BaseModel):
    """One check of the limit engine, as judged."""

    model_config = ConfigDict(extra="forbid")

    name: str
    kind: CheckKind
    actual: float | None
    expected: float
    limit: float
    rel: float
    pad: float
    verdict: CheckVerdict


class ABMetricRecord(BaseModel):
    """One metric of an A/B run: the candidate/base ratio, its interval and verdict (None: not measured)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    gated: bool
    tolerance: float
    ratio: float | None
    low: float | None
    high: float | None
    verdict: Verdict
    base_ms: float | None  # medians of the requests (load: of the processes)
    candidate_ms: float | None
    process_pairs: int
    request_pairs: int
    noisier_than_prior: bool = False
    # the run's own noise (verdicts.noise.estimate_noise, from 2 process pairs on): an A/A run's calibration
    between: float | None = None
    within: float | None = None

    def estimated_candidate_ms(self) -> float | None:
        """The candidate's figure as the verdict estimates it: the base's median times the paired ratio (so that
        the two figures a table shows and their change are one estimate); the candidate's own median without one."""
        if self.base_ms is not None and self.ratio is not None:
            return self.base_ms * self.ratio
        return self.candidate_ms


class StageShareRecord(BaseModel):
    """One stage's change and its share of e2e's change."""

    model_config = ConfigDict(extra="forbid")

    stage: str
    ratio: float | None
    low: float | None
    high: float | None
    delta_ms: float | None
    share: float | None  # None when e2e did not change
    named: bool


class AttributionRecord(BaseModel):
    """e2e's change and the stages that explain it (``named``, largest share first)."""

    model_config = ConfigDict(extra="forbid")

    ratio: float | None
    low: float | None
    high: float | None
    delta_ms: float | None
    named: list[str]
    stages: list[StageShareRecord]


class ABRecord(BaseModel):
    """A scenario's A/B run against a base build: the verdict, every metric, the attribution and the cost."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    headline: str  # "regressed: e2e +12.0 % [+8.0, +16.0], DenoisingStage +15.0 % explains 94 % (...)"
    base: str  # the --diffperf-base SPEC
    candidate: str  # the --diffperf-candidate SPEC
    process_pairs: int
    requests: int  # measured requests, both sides
    wall_s: float  # from the group's first server start to its last request, servers' starts included
    stop: StopReason | None
    metrics: list[ABMetricRecord]
    attribution: AttributionRecord | None = None
    servers: list[ServerRecord] = Field(default_factory=list)  # side, process pair, pid, port, load_ms, log
    shared_with: list[str] = Field(default_factory=list)  # the group's scenarios measured on the same process pairs
    busy_pairs: int = 0  # process pairs measured busy: judged with the priors verdicts.metrics.BUSY_NOISE times wider

    def metric(self, name: str) -> ABMetricRecord | None:
        return next((m for m in self.metrics if m.name == name), None)

    def deciding(self) -> ABMetricRecord | None:
        """The gated metric whose verdict is the scenario's: e2e when it is one, else the one that moved the most
        (e2e, whatever its verdict, when no gated metric shares the scenario's)."""
        same = [m for m in self.metrics if m.gated and m.verdict == self.verdict and m.ratio is not None]
        if not same:
            return self.metric("e2e")
        return (
            self.metric("e2e") if self.metric("e2e") in same else max(same, key=lambda m: abs(math.log(m.ratio or 1)))
        )


class NoisyCheckRecord(BaseModel):
    """One timing check judged with the run's noise: the interval on its true value against the limit, or (its
    limit within the noise fresh servers cannot remove) its point value, with the interval against the expected."""

    model_config = ConfigDict(extra="forbid")

    name: str
    actual: float
    low: float
    high: float
    expected: float
    limit: float
    verdict: StaticVerdict
    processes: int
    requests: int
    judged_by: Literal["interval", "point value"] = "interval"


class NoiseRecord(BaseModel):
    """A static run judged with its noise: the timing checks' intervals, and what it cost."""

    model_config = ConfigDict(extra="forbid")

    verdict: StaticVerdict
    attempts: int  # fresh servers measured (re-measures included)
    requests: int
    wall_s: float
    checks: list[NoisyCheckRecord]
    attribution: AttributionRecord | None = None  # of a failing e2e check: the stages that explain it


class MeasurementRecord(BaseModel):
    """What a baseline entry needs beyond the request rows: ``diffperf accept`` builds it from both, as
    ``--regen-baselines`` builds it from the measurement."""

    model_config = ConfigDict(extra="forbid")

    num_frames: Annotated[int, Field(ge=1)] | None = None
    is_video: bool = False
    wall_s: Seconds | None = None  # the warmup and measured requests on the first server (None: an A/B run)
    start_share_s: Seconds | None = None  # the server's start-up time split over the suite's scenarios on it


InterferenceEffect = Literal["none", "kept", "remeasured", "inconclusive"]


class OutsideProcessRecord(BaseModel):
    """A process outside the run and the CPU seconds it took in a measurement window."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    name: str
    cpu_s: float


class DeviceHolderRecord(BaseModel):
    """A process outside the run holding an assigned device (memory in MiB; None: not reported)."""

    model_config = ConfigDict(extra="forbid")

    device: str
    pid: int
    name: str
    memory_mib: float | None
    memory_total_mib: float | None


class InterferenceWindowRecord(BaseModel):
    """What outside processes took while one attempt (server start and requests) was measured."""

    model_config = ConfigDict(extra="forbid")

    wall_s: float
    cpus: int
    outside_cpu_s: float
    cpu_share: float  # outside CPU time / (wall time * CPUs)
    device_share: float  # the largest share of an assigned device's memory held by outside processes
    load_avg: list[float]  # 1, 5 and 15 minutes, at the window's end
    busy: bool  # over the run's --diffperf-busy-share
    top: list[OutsideProcessRecord] = Field(default_factory=list)
    devices: list[DeviceHolderRecord] = Field(default_factory=list)


class InterferenceRecord(BaseModel):
    """A scenario's interference: every attempt's window, and what it did to the verdict.

    ``effect``: ``none`` (not busy), ``kept`` (busy, the verdict kept: a pass, an A/B run whose two
    sides shared it), ``remeasured`` (a fail measured busy, judged again on attempts measured quiet),
    ``inconclusive`` (a fail measured busy, and the machine not quiet again in time; an A/B ``regressed``
    measured busy with one server at a time).
    """

    model_config = ConfigDict(extra="forbid")

    threshold: float | None  # --diffperf-busy-share (None: off)
    effect: InterferenceEffect
    waited_s: float = 0.0  # waiting for a quiet machine
    windows: list[InterferenceWindowRecord]

    @property
    def peak(self) -> InterferenceWindowRecord | None:
        """The busiest window."""
        return max(self.windows, key=lambda w: max(w.cpu_share, w.device_share), default=None)


class ScenarioResult(BaseModel):
    """One scenario: its per-request rows, every check, its verdicts and the server that ran it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    scenario: str
    verdict: Outcome  # the performance verdict alone
    rows: list[RequestRow] = Field(default_factory=list)
    checks: list[CheckRecord] = Field(default_factory=list)
    measured: dict[str, float] = Field(default_factory=dict)  # judged values: the statistic over the requests
    message: str = ""
    server: ServerRecord | None = None  # pid, port, load_ms and log of the server that ran it
    consistency: dict[str, Any] | None = None  # the output-vs-ground-truth result, when compared
    ab: ABRecord | None = None  # the A/B run against a base build (--diffperf-base)
    noise: NoiseRecord | None = None  # the static checks judged with the run's noise
    measurement: MeasurementRecord | None = None  # with the rows: the baseline entry this run measured
    interference: InterferenceRecord | None = None  # what other processes took while it was measured
    unreported: list[str] = Field(default_factory=list)  # memory checks not made: the server reported no such figure

    @field_validator("consistency")
    @classmethod
    def _known_status(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and value.get("status") not in CONSISTENCY_STATUSES:
            known = ", ".join(CONSISTENCY_STATUSES)
            raise ValueError(f"consistency status must be one of {known}, got {value.get('status')!r}")
        return value

    @property
    def consistency_status(self) -> ConsistencyStatus | None:
        return self.consistency["status"] if self.consistency else None

    @property
    def outcome(self) -> Outcome:
        return combine(self.verdict, self.consistency_status)

    def document(self) -> dict[str, Any]:
        """The results-file form: every field, and the outcome."""
        return {**self.model_dump(), "outcome": self.outcome}

    def check(self, name: str) -> CheckRecord | None:
        return next((c for c in self.checks if c.name == name), None)

    def check_verdict(self, check: CheckRecord) -> CheckVerdict | StaticVerdict:
        """A check's verdict as the scenario's was judged: the interval's for a timing check the run judged with
        its noise (it replaces the limit engine's), else the engine's."""
        noisy = next((c for c in self.noise.checks if c.name == check.name), None) if self.noise else None
        return noisy.verdict if noisy is not None else check.verdict
