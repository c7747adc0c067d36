"""Static mode made honest: a stored baseline, the one limit formula, and the noise of the run.

Without a base build the candidate is judged against ``limit = max(expected * (1 + rel),
expected + pad)`` (:func:`pytest_diffperf.perf.limits.limit`). One process's requests cannot show how
far that process, or the run that stored the baseline, sits from the truth, so the interval on
``log(actual / expected)`` adds two priors to the run's own spread: the stored baseline's run offset
(common to every re-measure) and the fresh process's offset (which re-measures average out). A
check then ``fail``s when the whole interval lies above the limit, ``pass``es when it lies at or
below it, and is ``inconclusive`` when it straddles it. A failing check is re-measured on a fresh
server, pooled with what came before, within ``max_attempts``; so is an inconclusive scenario
whose verdict the remaining attempts could still decide at its current estimates.

A limit can lie within the noise that the re-measure budget cannot remove (the stored baseline's
own offset, and what ``max_attempts`` fresh processes leave): then no interval could ever show no
change below it, and holding the scenario ``inconclusive`` for it would make every verdict so.
Such a check is judged by its **point value** (:func:`within_noise`): it passes when its estimate
is at or below the limit, and fails when its estimate is above the limit *and* its interval lies
wholly above the stored value (so a fail at no change stays within the check's share of
``alpha``); else it is inconclusive. Its verdict says so. The price: near the limit it fails
more often than ``alpha`` (up to half the time at a change exactly at the limit).

``alpha`` is split Bonferroni-style (valid whatever the checks' correlation): half to e2e, the
rest evenly over the other timing checks, each share evenly over the attempts.
SGLang instead retries a failing test up to 6 times and keeps the first pass, which lets a real
regression through.
Memory checks do not jitter and stay deterministic (:func:`pytest_diffperf.perf.limits.judge_check`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import DiffperfError
from ..perf.limits import Check
from ..protocol import DENOISING_STAGE
from .interval import estimate
from .noise import MEDIAN_VARIANCE, FloatArray, Noise
from .rules import CodeArray, look_alpha, z_value
from .vocab import STATIC_VERDICTS, StaticVerdict

BoolArray = NDArray[np.bool_]

TIMING_KINDS = frozenset({"e2e", "load", "denoise_agg", "step", "stage", "per_frame"})
PASS, FAIL, INCONCLUSIVE = (STATIC_VERDICTS.index(v) for v in ("pass", "fail", "inconclusive"))


@dataclass(frozen=True)
class StaticNoise:
    """Prior noise of one metric against a stored baseline (natural-log units, about relative sd).

    ``baseline``: the stored baseline's own run offset; ``process``: a fresh process's offset;
    ``within``: one request around its process's level. Weights as in
    :class:`~pytest_diffperf.verdicts.noise.Noise`.
    """

    baseline: float
    process: float
    within: float
    process_weight: float = 8.0
    within_weight: float = 20.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.baseline) and self.baseline >= 0):
            raise DiffperfError(
                f"expected a finite number >= 0, got {self.baseline!r}", source="noise prior", key="baseline"
            )
        Noise(self.process, self.within, self.process_weight, self.within_weight)  # validates the rest

    @property
    def run_noise(self) -> Noise:
        return Noise(self.process, self.within, self.process_weight, self.within_weight)


# From benchmarks/noise-study (the samples; its README says how to re-derive these): process medians
# of the same build spread 7-13 % (sd) from one fresh process to the next (e2e 9.3 % Flux, 13.1 % SD;
# decode 7-10.5 %; text encoding 15-19.5 %), single requests 10-14 % around their process; a stored
# baseline is one such process.
STATIC_E2E = StaticNoise(baseline=0.11, process=0.11, within=0.13)
STATIC_DENOISE = StaticNoise(baseline=0.12, process=0.12, within=0.15)
STATIC_STAGE = StaticNoise(baseline=0.2, process=0.2, within=0.25)
STATIC_LOAD = StaticNoise(baseline=0.14, process=0.14, within=0.0)


@dataclass(frozen=True)
class StaticPolicy:
    """False-alarm budget per scenario (``e2e_share`` of it to e2e), re-measure budget, noise priors per check kind."""

    alpha: float = 0.01
    max_attempts: int = 3
    e2e_share: float = 0.5
    e2e: StaticNoise = STATIC_E2E
    denoise: StaticNoise = STATIC_DENOISE  # denoising stages, step aggregates, steps, per-frame time
    stage: StaticNoise = STATIC_STAGE
    load: StaticNoise = STATIC_LOAD

    def __post_init__(self) -> None:
        look_alpha(self.alpha, 1.0, 1)
        if not (isinstance(self.max_attempts, int) and self.max_attempts >= 1):
            raise DiffperfError(
                f"expected an integer >= 1, got {self.max_attempts!r}", source="static policy", key="max_attempts"
            )
        if not 0 < self.e2e_share < 1:
            raise DiffperfError(
                f"expected 0 < e2e_share < 1, got {self.e2e_share!r}", source="static policy", key="e2e_share"
            )

    def noise(self, check: Check, denoising: Collection[str] = frozenset({DENOISING_STAGE})) -> StaticNoise:
        if check.kind not in TIMING_KINDS:
            raise ValueError(f"{check.name}: {check.kind} checks are deterministic, judge them with limits.judge_check")
        if check.kind == "e2e":
            return self.e2e
        if check.kind == "load":
            return self.load
        if check.kind == "stage" and check.key.removeprefix("stages_ms.") not in denoising:
            return self.stage
        return self.denoise

    def z(self, timing_checks: int, *, e2e: bool = False) -> float:
        """An interval's ``z`` among ``timing_checks`` checks: e2e's ``e2e_share`` of ``alpha``, or an even part of
        the rest (the whole of it when the check is alone), split evenly over the attempts."""
        rest = (1 - self.e2e_share) / max(timing_checks - 1, 1)
        share = 1.0 if timing_checks <= 1 else self.e2e_share if e2e else rest
        return z_value(look_alpha(self.alpha, share, self.max_attempts))


def forecast_se(noise: StaticNoise, requests: FloatArray, attempts: int) -> FloatArray:
    """The priors' standard error of ``log(true / expected)`` over ``attempts`` fresh processes of ``requests``
    requests each; the stored baseline's own offset stays whatever the attempts."""
    m = np.maximum(np.asarray(requests, dtype=np.float64), 1.0)
    own = np.where(m <= 2, 1.0, MEDIAN_VARIANCE) * noise.within**2 / m
    return np.asarray(np.sqrt(noise.baseline**2 + (noise.process**2 + own) / attempts), dtype=np.float64)


def within_noise(edge: FloatArray, noise: StaticNoise, z: float, requests: FloatArray, attempts: int) -> BoolArray:
    """Whether a limit (``edge`` = ``log(limit / expected)``) lies within the noise ``attempts`` fresh processes
    cannot remove: at no change the interval could never lie at or below it. Such a check is judged by point value."""
    return np.asarray(z * forecast_se(noise, requests, attempts) >= np.asarray(edge, dtype=np.float64), dtype=np.bool_)


def _codes(est: FloatArray, low: FloatArray, high: FloatArray, edge: FloatArray, point: BoolArray) -> CodeArray:
    """Verdict codes of intervals on ``log(true / expected)`` against ``edge``; by point value where ``point``."""
    codes = np.full(np.broadcast(est, edge, point).shape, INCONCLUSIVE, dtype=np.int8)
    codes[np.where(point, est <= edge, high <= edge)] = PASS
    codes[np.where(point, (est > edge) & (low > 0), low > edge)] = FAIL
    return codes


def static_codes(
    log_actual: FloatArray,
    log_expected: FloatArray,
    log_limit: FloatArray,
    noise: StaticNoise,
    z: float,
    attempts: int = 1,
) -> tuple[CodeArray, FloatArray, FloatArray, BoolArray]:
    """Verdict codes (index into ``STATIC_VERDICTS``), interval on ``log(true / expected)``, and whether the check
    was judged by point value (its limit within the noise ``attempts``, the budget's fresh processes, cannot remove).

    ``log_actual`` is shaped ``(..., processes, requests)`` (NaN: missing); ``log_expected`` and
    ``log_limit`` (the limit from :func:`pytest_diffperf.perf.limits.limit`) broadcast over ``...``.
    The vectorised core (the benchmark's path).
    """
    log_actual = np.asarray(log_actual, dtype=np.float64)
    log_expected = np.asarray(log_expected, dtype=np.float64)
    e = estimate(log_actual - log_expected[..., None, None], noise.run_noise)
    se = np.sqrt(e.se**2 + noise.baseline**2)
    low, high = e.log_ratio - z * se, e.log_ratio + z * se
    edge = np.asarray(log_limit, dtype=np.float64) - log_expected
    per_process = e.request_pairs / np.maximum(e.process_pairs, 1.0)
    point = within_noise(edge, noise, z, per_process, attempts)
    return _codes(e.log_ratio, low, high, edge, point), low, high, point


@dataclass(frozen=True)
class StaticResult:
    """One timing check judged on several requests from one or more fresh processes."""

    check: Check
    actual: float  # median of every request
    low: float  # interval on the true value, ms
    high: float
    verdict: StaticVerdict
    processes: int
    requests: int
    z: float  # the interval's
    point: bool = False  # judged by point value: the limit lies within the noise the budget cannot remove

    @property
    def estimate(self) -> float:
        """The interval's centre, ms: the point value a check judged by point value is judged on."""
        return math.sqrt(self.low * self.high)

    def text(self) -> str:
        c, u = self.check, self.check.unit
        counts = f"{self.requests} requests, {self.processes} process(es)"
        if not self.point:
            return (
                f"{c.name}: {self.verdict}: {self.actual:.2f} {u} [{self.low:.2f}, {self.high:.2f}] vs limit "
                f"{c.limit:.2f} {u} (expected {c.expected:.2f} {u}; {counts})"
            )
        side = "<=" if self.estimate <= c.limit else ">"
        return (
            f"{c.name}: {self.verdict} by point value: {self.estimate:.2f} {u} {side} limit {c.limit:.2f} {u}, "
            f"interval [{self.low:.2f}, {self.high:.2f}] vs expected {c.expected:.2f} {u} ({counts}; the limit lies "
            "within the noise fresh servers cannot remove: a fail needs the interval above the expected value)"
        )


def judge_static(
    check: Check, samples: Sequence[Sequence[float]], noise: StaticNoise, z: float, attempts: int = 1
) -> StaticResult:
    """Judge one timing check on its samples, one sequence per fresh process (attempt so far); ``attempts``: the
    budget's fresh processes (whether the limit lies within the noise they cannot remove)."""
    if check.kind not in TIMING_KINDS or not check.expected > 0:
        raise ValueError(f"{check.name}: only timing checks with an expected value > 0 are judged statistically")
    values = [float(x) for xs in samples for x in xs if math.isfinite(x) and x > 0]
    if not values:
        raise ValueError(f"{check.name}: no valid samples")
    width = max(len(xs) for xs in samples)
    logs = np.full((len(samples), width), np.nan)
    for i, xs in enumerate(samples):
        for j, x in enumerate(xs):
            if math.isfinite(x) and x > 0:
                logs[i, j] = math.log(x)
    codes, low, high, point = static_codes(
        logs, _a(math.log(check.expected)), _a(math.log(check.limit)), noise, z, attempts
    )
    return StaticResult(
        check=check,
        actual=float(np.median(values)),
        low=check.expected * math.exp(float(low)),
        high=check.expected * math.exp(float(high)),
        verdict=STATIC_VERDICTS[int(codes)],
        processes=sum(1 for xs in samples if any(math.isfinite(x) and x > 0 for x in xs)),
        requests=len(values),
        z=z,
        point=bool(point),
    )


def judge_static_checks(
    checks: Sequence[Check],
    samples: Mapping[str, Sequence[Sequence[float]]],
    policy: StaticPolicy | None = None,
    *,
    denoising: Collection[str] = frozenset({DENOISING_STAGE}),
) -> list[StaticResult]:
    """Every timing check with an expected value > 0 and samples (by check name), judged.

    The rest stays with the limit engine: memory checks, unguarded checks (expected 0) and
    missing measurements get their verdicts from :func:`pytest_diffperf.perf.limits.judge_check`, and a
    missing one must fail the scenario there; :func:`scenario_verdict` sees only these results.
    """
    policy = StaticPolicy() if policy is None else policy
    judged = [c for c in checks if c.kind in TIMING_KINDS and c.expected > 0 and _has_values(samples.get(c.name))]
    return [
        judge_static(
            c,
            samples[c.name],
            policy.noise(c, denoising),
            policy.z(len(judged), e2e=c.kind == "e2e"),
            policy.max_attempts,
        )
        for c in judged
    ]


def _a(x: float) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def _has_values(samples: Sequence[Sequence[float]] | None) -> bool:
    return samples is not None and any(math.isfinite(x) and x > 0 for xs in samples for x in xs)


def scenario_verdict(results: Sequence[StaticResult]) -> StaticVerdict:
    """``fail`` when a check fails, ``pass`` when every check passes, else ``inconclusive``."""
    verdicts = {r.verdict for r in results}
    if "fail" in verdicts:
        return "fail"
    return "pass" if verdicts == {"pass"} else "inconclusive"


def forecast(
    low: FloatArray,
    high: FloatArray,
    log_limit: FloatArray,
    noise: StaticNoise,
    z: float,
    requests: FloatArray,
    attempts: int,
) -> CodeArray:
    """The verdict codes ``attempts`` attempts would give an interval ``[low, high]`` at its estimate.

    All three on ``log(value / expected)``. The forecast interval keeps the estimate and shrinks to
    :func:`forecast_se`. A check whose limit lies within that noise is forecast by its point value
    alone: past the limit, more servers either confirm it (a fail) or bring it back (a pass), so it
    is forecast to fail, as a failing check is measured again before it is reported.
    """
    est = (np.asarray(low) + np.asarray(high)) / 2
    half = z * forecast_se(noise, requests, attempts)
    edge = np.asarray(log_limit, dtype=np.float64)
    point = within_noise(edge, noise, z, requests, attempts)
    codes = _codes(est, est - half, est + half, edge, point)
    codes[point & (est > edge)] = FAIL
    return codes


def go_on(now: CodeArray, later: CodeArray) -> NDArray[np.bool_]:
    """Whether more attempts can change a scenario's verdict, from its checks' codes now and forecast (last axis).

    Yes when a check fails (a failure is confirmed on a fresh server before it is reported), when
    an inconclusive check is forecast to fail, or when every check that has not passed is
    forecast to pass; no when every check passes.
    """
    now, later = np.asarray(now), np.asarray(later)
    open_ = now == INCONCLUSIVE
    fails = np.any(now == FAIL, axis=-1) | np.any(open_ & (later == FAIL), axis=-1)
    could_pass = np.any(open_, axis=-1) & np.all(~open_ | (later == PASS), axis=-1)
    return np.asarray(fails | could_pass, dtype=np.bool_)


def remeasure(
    results: Sequence[StaticResult],
    attempts: int,
    policy: StaticPolicy | None = None,
    *,
    denoising: Collection[str] = frozenset({DENOISING_STAGE}),
) -> bool:
    """Whether to measure again on a fresh server, after ``attempts`` attempts judged as ``results``.

    Yes while attempts remain and more attempts can change the scenario's verdict (:func:`go_on`,
    on each check's :func:`forecast`).
    """
    policy = StaticPolicy() if policy is None else policy
    if attempts < 1:
        raise ValueError("remeasure is asked after at least one attempt")
    if attempts >= policy.max_attempts or not results:
        return False
    now = np.array([STATIC_VERDICTS.index(r.verdict) for r in results], dtype=np.int8)
    later = np.array(
        [
            int(
                forecast(
                    _a(math.log(r.low / r.check.expected)),
                    _a(math.log(r.high / r.check.expected)),
                    _a(math.log(r.check.limit / r.check.expected)),
                    policy.noise(r.check, denoising),
                    r.z,
                    _a(r.requests / max(r.processes, 1)),
                    policy.max_attempts,
                )
            )
            for r in results
        ],
        dtype=np.int8,
    )
    return bool(go_on(now, later))
