"""Verdict quality on recorded real sessions: false alarms, detection, the stage named, requests per verdict.

Three ways of judging a scenario are compared on the same recorded timings (``--data``, default
``benchmarks/noise-study/data``: tiny Flux and SD pipelines on a shared 2-vCPU VM):

- **A/B** (``pytest_diffperf.verdicts``): a fresh base and candidate server side by side, request
  pairs alternated, k process pairs x m request pairs, adaptive (stop when decisive, add a
  process pair while not, within the budget), the default :class:`VerdictPolicy`.
- **static** (``pytest_diffperf.verdicts.static``): the candidate alone against a stored baseline,
  ``n`` requests per fresh server, every timing check of ``limits.plan_checks`` judged with the
  run's noise (pass / fail / inconclusive), re-measured on a fresh server while ``remeasure``
  says more attempts can change the verdict; with SGLang's ``pr_test`` tolerances and with the
  bundled suite's (``data/perf_baselines/cpu.json``).
- **SGLang**: SGLang's single-sample rule: one request, fail iff ``actual > max(expected * (1 +
  rel), expected + pad)`` on any timing check (``limits.plan_checks``, tolerances from SGLang's
  v0.5.23 ``pr_test`` profile, SGLang's pads); also "with retries": failing only when each of 7
  attempts (a failing test retried up to 6 times, each on a fresh server) fails.

How resampling works
--------------------
*A/B sessions* (``ab_flux.jsonl.gz``: 10 sessions, ``ab_sd.jsonl.gz``: 6) were recorded as 2 fresh
worker processes with identical code, 3 warm-up + 30 request pairs alternating A,B / B,A. Both
processes run the same build, so every session is an A/A run: a trial of the A/B mode draws k of
them (without replacement while k <= sessions, then with replacement), flips which process plays
the base (the flip is legitimate because the code is identical, and it makes no-change symmetric),
takes m consecutive request pairs at a random start, and applies the effect to the candidate's
requests. The k process pairs arrive one by one and the adaptive rule looks after each, exactly
as an orchestrator would drive it. Load time is drawn per process from the single-process sets'
module build times (the A/B sessions record one per session).

*Static and SGLang* use the same recorded processes (the 20 Flux and 12 SD A/B processes; and,
in a second table, the single-process sets: ``flux`` + ``flux_holdout`` = 17 processes, ``sd`` = 9):
the stored baseline is the median of 20 consecutive requests of one process, the candidate
processes come from other sessions, each attempt from a different process.

*Effects* are multiplicative on the candidate's requests, per request: ``e2e+x% via denoise``
adds ``x * e2e`` ms to DenoisingStage (so e2e grows by exactly x, the denoise stage by about x /
0.7 on Flux, x / 0.9 on SD, every step by the stage's factor); ``DenoisingStage+x%`` multiplies
that stage and its steps by 1 + x and adds the difference to e2e; ``DecodingStage+x%`` likewise for
decoding. They are what ``--inject-delay`` produces with delays sized relative to the stage time.

Limits of this evidence
-----------------------
- 16 A/B sessions (and 26 single processes) from one VM in one half hour: resampling within them
  understates the variety of processes, hosts and days. With k close to the session count (and
  beyond it for SD) trials reuse sessions, so the A/B figures for large k are optimistic.
- Trials are not independent: they share those sessions. The binomial intervals below (Wilson,
  95 %) describe the resampling error only; the error from having recorded only these sessions
  is larger and not quantified. The noise priors were rounded up from these same sessions, so the
  false-alarm figures are in-sample; a hold-out on fresh sessions is what ``--live`` is for.
- Injected effects scale the recorded samples; a real regression can also change the noise.
- Recorded request pairs alternate strictly (A,B then B,A); the randomized order of
  ``ABDesign.orders`` cannot be replayed on them.
- Estimated wall time is ``requests * median e2e + servers started * --start-s`` (the reference
  server's ready time here), not a measurement.

Live
----
``--live`` runs the reference server instead (the bundled case ``--live-case``): a stored baseline
from 20 requests of one fresh server, then per effect ``--live-trials`` trials of fresh server
pairs driven exactly as ``pytest --diffperf-base`` drives them (``serving.abservers``, the default design
and policy), the candidate started with ``--inject-delay`` sized from the baseline's median
(``e2e +x %``: ``x * e2e`` ms inside DenoisingStage; ``DecodingStage +10 %``: a tenth of that
stage). Static mode and SGLang's rule judge the same trial's candidate servers against the stored
baseline: static mode one candidate server per attempt, SGLang's rule the first measured
request. A trial runs process pairs until A/B has stopped and static mode too. A trial costs
minutes (fresh servers), so live rates carry wide binomial intervals; resampling covers rates
near 1 %.

    nice python benchmarks/bench_verdicts.py --trials 20000 --json out.json
    nice python benchmarks/bench_verdicts.py --live --live-trials 4 --json live.json
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from pytest_diffperf.cases import Case, load_cases
from pytest_diffperf.judging.abscenario import design_for, pair_samples
from pytest_diffperf.judging.noisy import judge_noisy
from pytest_diffperf.perf.limits import (
    Check,
    CheckKind,
    JudgeRules,
    Preset,
    evaluate,
    get_preset,
    judge_check,
    limit,
    plan_checks,
    stage_name,
)
from pytest_diffperf.perf.measurement import Measurement
from pytest_diffperf.perf.schema import ScenarioBaseline, Tolerances
from pytest_diffperf.protocol import (
    DECODING_STAGE,
    DENOISING_STAGE,
    LATENT_PREPARATION_STAGE,
    TEXT_ENCODING_STAGE,
    TIMESTEP_PREPARATION_STAGE,
)
from pytest_diffperf.serving.abservers import ABServers, PairWork, SideServer, resolve_side
from pytest_diffperf.serving.launchers import ServerSpec, get_launcher
from pytest_diffperf.serving.measure import measure
from pytest_diffperf.serving.pool import ServerPool
from pytest_diffperf.serving.sidespec import parse_side_spec
from pytest_diffperf.verdicts.abstats import (
    ABResult,
    ProcessPairSamples,
    analyse,
    base_levels,
    judge_ab_metrics,
    noisier_than_prior,
)
from pytest_diffperf.verdicts.attribution import named, shares
from pytest_diffperf.verdicts.design import ABDesign
from pytest_diffperf.verdicts.interval import estimate
from pytest_diffperf.verdicts.metrics import BUSY_NOISE, VerdictPolicy, busy_machine, one_at_a_time
from pytest_diffperf.verdicts.noise import Noise, estimate_noise
from pytest_diffperf.verdicts.static import (
    FAIL,
    PASS,
    StaticPolicy,
    forecast,
    go_on,
    judge_static_checks,
    remeasure,
    scenario_verdict,
    static_codes,
)
from pytest_diffperf.verdicts.vocab import IMPROVED, INCONCLUSIVE, REGRESSED, SIDES, STATIC_VERDICTS, UNCHANGED, Side

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "benchmarks" / "noise-study" / "data"
STAGES = {
    "text_encode": TEXT_ENCODING_STAGE,
    "latent_prep": LATENT_PREPARATION_STAGE,
    "timesteps": TIMESTEP_PREPARATION_STAGE,
    "denoise": DENOISING_STAGE,
    "decode": DECODING_STAGE,
}
DENOISE, DECODE = stage_name(DENOISING_STAGE), stage_name(DECODING_STAGE)
STEP_FRACTIONS = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
SGLANG_PR_TEST = Tolerances(e2e=0.25, denoise_stage=0.25, non_denoise_stage=0.8, denoise_step=0.3, denoise_agg=0.2)
SGLANG_ATTEMPTS = 7
BUNDLED_BASELINES = REPO / "data" / "perf_baselines" / "cpu.json"
BUNDLED_REQUESTS = 3  # the bundled cases' perf_repeat_requests
BASELINE_REQUESTS = 20


# ---------------------------------------------------------------------------------------- data
@dataclass
class Pool:
    """Recorded processes of one kind: per-request metrics ``(process, request)``, steps ``(process, request, step)``."""

    kind: str
    metrics: dict[str, np.ndarray]
    steps: np.ndarray
    session: np.ndarray  # session id per process (A/B: both processes of a session share it)
    loads_ms: np.ndarray  # fresh-process load (module build) times of this kind, for the load metric

    @property
    def processes(self) -> int:
        return len(self.session)

    @property
    def requests(self) -> int:
        return int(self.steps.shape[1])


def bundled_tolerances(profile: str) -> Tolerances:
    """A tolerance profile of the bundled suite's baseline file."""
    return Tolerances.model_validate(json.loads(BUNDLED_BASELINES.read_text())["tolerances"][profile])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f]


def request_values(records: Sequence[dict[str, Any]]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    steps = np.array([r["steps_ms"] for r in records], dtype=np.float64)
    metrics = {"e2e": np.array([r["e2e_ms"] for r in records])}
    for key, stage in STAGES.items():
        metrics[stage_name(stage)] = np.array([r["stages_ms"][key] for r in records])
    return metrics, steps


def with_aggregates(metrics: dict[str, np.ndarray], steps: np.ndarray) -> dict[str, np.ndarray]:
    out = dict(metrics)
    out["avg_denoise"] = steps.mean(axis=-1)
    out["median_denoise"] = np.median(steps, axis=-1)
    return out


def load_times(data: Path, kind: str) -> np.ndarray:
    files = ["flux.jsonl.gz", "flux_holdout.jsonl.gz", "flux_t1.jsonl.gz"] if kind == "flux" else ["sd.jsonl.gz"]
    return np.array([r["meta"]["build_s"] * 1000 for f in files for r in read_jsonl(data / f) if "meta" in r])


def ab_pool(data: Path, kind: str) -> Pool:
    """The A/B sessions: process 2s is session s's A, 2s+1 its B; request j of both is pair j."""
    records = [r for r in read_jsonl(data / f"ab_{kind}.jsonl.gz") if not r["warmup"]]
    tags = sorted({r["tag"] for r in records}, key=lambda t: int(t[1:]))
    per_proc = []
    for tag in tags:
        for role in "AB":
            per_proc.append(
                sorted((r for r in records if r["tag"] == tag and r["role"] == role), key=lambda r: r["pair"])
            )
    n = min(len(p) for p in per_proc)
    values = [request_values(p[:n]) for p in per_proc]
    metrics = {k: np.stack([v[0][k] for v in values]) for k in values[0][0]}
    steps = np.stack([v[1] for v in values])
    return Pool(
        kind, with_aggregates(metrics, steps), steps, np.repeat(np.arange(len(tags)), 2), load_times(data, kind)
    )


def single_pool(data: Path, kind: str) -> Pool:
    """Single-process sets, each process its own session, cut to its first 20 timed requests."""
    files = ["flux.jsonl.gz", "flux_holdout.jsonl.gz"] if kind == "flux" else ["sd.jsonl.gz"]
    procs: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        for r in read_jsonl(data / f):
            if not r["warmup"]:
                procs.setdefault(f"{f}:{r['proc']}", []).append(r)
    n = min(len(p) for p in procs.values())
    values = [request_values(sorted(p, key=lambda r: r["idx"])[:n]) for p in procs.values()]
    metrics = {k: np.stack([v[0][k] for v in values]) for k in values[0][0]}
    steps = np.stack([v[1] for v in values])
    return Pool(kind, with_aggregates(metrics, steps), steps, np.arange(len(values)), load_times(data, kind))


# ------------------------------------------------------------------------------------- effects
@dataclass(frozen=True)
class Effect:
    """A multiplicative slowdown of the candidate: ``stage`` grows by ``x`` of e2e (``via_e2e``) or of itself."""

    label: str
    stage: str | None = None
    x: float = 0.0
    via_e2e: bool = False
    target: str | None = None  # the stage that should be named


EFFECTS = [
    Effect("none"),
    Effect("e2e +5 % via denoise", DENOISE, 0.05, True, DENOISING_STAGE),
    Effect("e2e +10 % via denoise", DENOISE, 0.10, True, DENOISING_STAGE),
    Effect("e2e +20 % via denoise", DENOISE, 0.20, True, DENOISING_STAGE),
    Effect("DenoisingStage +10 %", DENOISE, 0.10, False, DENOISING_STAGE),
    Effect("DecodingStage +10 %", DECODE, 0.10, False, DECODING_STAGE),
    Effect("DecodingStage +20 %", DECODE, 0.20, False, DECODING_STAGE),
    Effect("DecodingStage +50 %", DECODE, 0.50, False, DECODING_STAGE),
    Effect("e2e x2 via denoise", DENOISE, 1.00, True, DENOISING_STAGE),
]


def apply_effect(
    metrics: Mapping[str, np.ndarray], steps: np.ndarray, effect: Effect
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The candidate's version of recorded requests (element-wise per request)."""
    out, steps = dict(metrics), steps
    if effect.stage is None:
        return out, steps
    stage = metrics[effect.stage]
    added = effect.x * (metrics["e2e"] if effect.via_e2e else stage)
    out[effect.stage] = stage + added
    out["e2e"] = metrics["e2e"] + added
    if effect.stage == DENOISE:
        factor = out[effect.stage] / stage
        steps = steps * factor[..., None]
        out["avg_denoise"] = metrics["avg_denoise"] * factor
        out["median_denoise"] = metrics["median_denoise"] * factor
    return out, steps


def wilson(p: float, n: int) -> tuple[float, float]:
    """95 % Wilson interval of a binomial proportion."""
    if n == 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf(0.975)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(p: float, n: int) -> str:
    lo, hi = wilson(p, n)
    return f"{100 * p:.2f} [{100 * lo:.2f}, {100 * hi:.2f}]"


# ------------------------------------------------------------------------------------------ A/B
@dataclass
class ABOutcome:
    verdicts: np.ndarray  # final scenario codes
    process_pairs: np.ndarray
    named_target: np.ndarray  # the effect's stage is named
    named_other: np.ndarray  # a stage other than the target is named
    noisy: np.ndarray  # a gated metric is flagged noisier than its prior at the stop
    metric_regressed: dict[str, float] = field(default_factory=dict)  # per metric: regressed at the stop


def draw_ab(
    pool: Pool, trials: int, k: int, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Base and candidate process indices ``(trials, k)`` and request indices ``(trials, k, m)``."""
    sessions = int(pool.session.max()) + 1
    order = np.argsort(rng.random((trials, sessions)), axis=1)
    if k > sessions:
        order = np.concatenate([order, rng.integers(sessions, size=(trials, k - sessions))], axis=1)
    sess = order[:, :k]
    flip = rng.integers(2, size=(trials, k))
    base, cand = 2 * sess + flip, 2 * sess + 1 - flip
    start = rng.integers(0, pool.requests - m + 1, size=(trials, k))
    return base, cand, start[:, :, None] + np.arange(m)


def draw_sequential(
    pool: Pool, trials: int, k: int, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Like :func:`draw_ab` for servers run one after the other: two distinct processes of a single-process set
    per process pair (recorded minutes apart), request ``j`` of one against request ``j`` of the other."""
    base = rng.integers(pool.processes, size=(trials, k))
    cand = (base + rng.integers(1, pool.processes, size=(trials, k))) % pool.processes
    start = rng.integers(0, pool.requests - m + 1, size=(trials, k))
    return base, cand, start[:, :, None] + np.arange(m)


def simulate_ab(
    pool: Pool,
    effect: Effect,
    design: ABDesign,
    policy: VerdictPolicy,
    trials: int,
    seed: int,
    noise_scale: float = 1.0,
    draw: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]] = draw_ab,
) -> ABOutcome:
    """``noise_scale`` multiplies the recorded log ratios (the effect added after): a machine that much noisier;
    ``draw`` pairs the recorded processes (:func:`draw_ab`: side by side, :func:`draw_sequential`: one at a time)."""
    rng = np.random.default_rng(seed)
    k_max, m = design.process_pair_budget, design.request_pairs
    base_p, cand_p, req = draw(pool, trials, k_max, m, rng)
    cand_metrics, _ = apply_effect(pool.metrics, pool.steps, effect)
    bi, ci = base_p[:, :, None], cand_p[:, :, None]
    base_v = {name: v[bi, req] for name, v in pool.metrics.items()}
    logs = {
        name: noise_scale * np.log(pool.metrics[name][ci, req] / base_v[name])
        + np.log(cand_metrics[name][ci, req] / pool.metrics[name][ci, req])
        for name in pool.metrics
    }
    loads = rng.choice(pool.loads_ms, size=(trials, k_max, 2))
    logs["load"] = np.log(loads[:, :, 1:] / loads[:, :, :1])
    stages = [n for n in pool.metrics if n.startswith("stage[")]
    codes = np.empty((trials, k_max), dtype=np.int8)
    metric_codes = {name: np.empty((trials, k_max), dtype=np.int8) for name in logs}
    named_by_stage = {s: np.zeros((trials, k_max), dtype=bool) for s in stages}
    noisy = np.zeros((trials, k_max), dtype=bool)
    for look in range(k_max):
        j = judge_ab_metrics({name: d[:, : look + 1] for name, d in logs.items()}, policy, design)
        codes[:, look] = j.scenario
        for name, spec in j.specs.items():
            if spec.gated:
                noisy[:, look] |= noisier_than_prior(j.within[name], j.within_dof[name], spec.noise.within)
        for name in logs:
            metric_codes[name][:, look] = j.codes[name]
        e2e_level = base_levels(base_v["e2e"][:, : look + 1])
        for s in stages:
            share = shares(j.log_ratio["e2e"], e2e_level, j.log_ratio[s], base_levels(base_v[s][:, : look + 1]))
            named_by_stage[s][:, look] = named(j.log_ratio["e2e"], share, j.log_ratio[s], j.se[s])
    pairs, final = design.stop_looks(codes)
    at = (pairs - 1)[:, None]
    named_at = {s: np.take_along_axis(v, at, axis=1)[:, 0] for s, v in named_by_stage.items()}
    target = stage_name(effect.target) if effect.target else None
    named_target = named_at[target] if target else np.zeros(trials, dtype=bool)
    named_other = np.zeros(trials, dtype=bool)
    for s, v in named_at.items():
        if s != target:
            named_other |= v
    regressed = {
        name: float((np.take_along_axis(c, at, axis=1)[:, 0] == REGRESSED).mean()) for name, c in metric_codes.items()
    }
    noisy_at = np.take_along_axis(noisy, at, axis=1)[:, 0]
    return ABOutcome(final, pairs, named_target, named_other, noisy_at, regressed)


# --------------------------------------------------------------------------------- static, SGLang
@dataclass
class Checks:
    """Per trial, each timing check's expected value and limit (``(trials, checks)``), from ``limits.plan_checks``."""

    names: list[str]
    kinds: list[CheckKind]
    expected: np.ndarray
    limits: np.ndarray
    sample: list[list[Check]]  # the first trials' real Check objects, to cross-check the vectorised rule


def metric_of(name: str, metrics: Mapping[str, np.ndarray], steps: np.ndarray) -> np.ndarray:
    if name.startswith("step["):
        return steps[..., int(name[5:-1])]
    return metrics[name]


def baseline_checks(pool: Pool, base_p: np.ndarray, start: np.ndarray, tol: Tolerances) -> Checks:
    """The stored baseline of each trial (median of 20 consecutive requests) and its planned checks."""
    idx = start[:, None] + np.arange(BASELINE_REQUESTS)
    med = {name: np.median(v[base_p[:, None], idx], axis=1) for name, v in pool.metrics.items()}
    steps = np.median(pool.steps[base_p[:, None], idx], axis=1)
    rules = JudgeRules(tol, get_preset("sglang"), tuple(STEP_FRACTIONS))

    def scenario(t: int) -> ScenarioBaseline:
        return ScenarioBaseline(
            stages_ms={s: float(med[stage_name(s)][t]) for s in STAGES.values()},
            denoise_step_ms={str(i): float(steps[t, i]) for i in range(steps.shape[1])},
            expected_e2e_ms=float(med["e2e"][t]),
            expected_avg_denoise_ms=float(med["avg_denoise"][t]),
            expected_median_denoise_ms=float(med["median_denoise"][t]),
        )

    def plan(t: int) -> list[Check]:
        checks = plan_checks(scenario(t), rules, is_video=False, num_frames=None)
        return [c for c in checks if c.unit == "ms"]

    template = plan(0)
    names, kinds = [c.name for c in template], [c.kind for c in template]
    expected = np.empty((len(base_p), len(names)))
    for c_i, name in enumerate(names):
        expected[:, c_i] = steps[:, int(name[5:-1])] if name.startswith("step[") else med[name]
    rel = np.array([c.rel for c in template])
    pad = np.array([c.pad for c in template])
    limits = np.vectorize(limit)(expected, rel[None, :], pad[None, :])  # the one limit formula, per element
    sample = [plan(t) for t in range(min(len(base_p), 50))]
    for t, checks in enumerate(sample):  # the vectorised plan is the engine's plan
        assert [c.name for c in checks] == names
        assert np.allclose([c.limit for c in checks], limits[t]), "vectorised limits differ from plan_checks"
    return Checks(names, kinds, expected, limits, sample)


def draw_static(
    pool: Pool, trials: int, attempts: int, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Baseline process and start; ``attempts`` candidate processes from other sessions, and their request indices."""
    base_p = rng.integers(pool.processes, size=trials)
    base_start = rng.integers(0, pool.requests - BASELINE_REQUESTS + 1, size=trials)
    other = pool.session[None, :] != pool.session[base_p][:, None]
    keys = np.where(other, rng.random((trials, pool.processes)), np.inf)
    cand = np.argsort(keys, axis=1)[:, :attempts]
    if not np.all(np.take_along_axis(other, cand, axis=1)):
        raise SystemExit(f"{pool.kind}: not enough processes from other sessions for {attempts} attempts")
    start = rng.integers(0, pool.requests - n + 1, size=(trials, attempts))
    return base_p, base_start, cand, start[:, :, None] + np.arange(n)


@dataclass
class StaticOutcome:
    verdicts: np.ndarray  # static codes
    requests: np.ndarray
    attempts: np.ndarray
    e2e_fail: np.ndarray
    point: np.ndarray  # checks judged by point value (their limit within the noise)


def simulate_static(
    pool: Pool, effect: Effect, checks: Checks, cand: np.ndarray, req: np.ndarray, policy: StaticPolicy
) -> StaticOutcome:
    """Static mode over attempts: judged after each, re-measured while ``go_on`` (the rule of ``remeasure``)."""
    cm, cs = apply_effect(pool.metrics, pool.steps, effect)
    trials, attempts = cand.shape
    log_exp, log_lim = np.log(checks.expected), np.log(checks.limits)
    per_attempt = np.empty((trials, attempts), dtype=np.int8)
    more = np.zeros((trials, attempts), dtype=bool)
    e2e_fail = np.empty((trials, attempts), dtype=bool)
    points = np.empty((trials, attempts), dtype=np.int64)
    for a in range(attempts):
        codes = np.empty((trials, len(checks.names)), dtype=np.int8)
        later = np.empty_like(codes)
        point = np.empty(codes.shape, dtype=bool)
        for c_i, name in enumerate(checks.names):
            values = metric_of(name, cm, cs)[cand[:, : a + 1, None], req[:, : a + 1]]
            noise = policy.noise(checks.sample[0][c_i])
            z = policy.z(len(checks.names), e2e=name == "e2e")
            edge = log_lim[:, c_i] - log_exp[:, c_i]
            codes[:, c_i], low, high, point[:, c_i] = static_codes(
                np.log(values), log_exp[:, c_i], log_lim[:, c_i], noise, z, policy.max_attempts
            )
            later[:, c_i] = forecast(low, high, edge, noise, z, np.asarray(float(req.shape[-1])), policy.max_attempts)
        verdict = np.full(trials, STATIC_VERDICTS.index("inconclusive"), dtype=np.int8)
        verdict[np.all(codes == PASS, axis=1)] = PASS
        verdict[np.any(codes == FAIL, axis=1)] = FAIL
        per_attempt[:, a] = verdict
        more[:, a] = go_on(codes, later) & (a + 1 < policy.max_attempts)
        e2e_fail[:, a] = codes[:, checks.names.index("e2e")] == FAIL
        points[:, a] = point.sum(axis=1)
        for t, sample in enumerate(checks.sample[:10]):  # the vectorised rule is the plugin's scalar one
            values = {
                c.name: metric_of(c.name, cm, cs)[cand[t, : a + 1, None], req[t, : a + 1]].tolist() for c in sample
            }
            results = judge_static_checks(sample, values, policy)
            assert STATIC_VERDICTS.index(scenario_verdict(results)) == per_attempt[t, a], "static verdicts differ"
            assert remeasure(results, a + 1, policy) == more[t, a], "re-measure decisions differ"
            assert [r.point for r in results] == list(point[t]), "point-value checks differ"
    stop = np.where((~more).any(axis=1), np.argmax(~more, axis=1), attempts - 1)
    final = np.take_along_axis(per_attempt, stop[:, None], axis=1)[:, 0]
    at_stop = stop[:, None]
    return StaticOutcome(
        final,
        (stop + 1) * req.shape[-1],
        stop + 1,
        np.take_along_axis(e2e_fail, at_stop, axis=1)[:, 0],
        np.take_along_axis(points, at_stop, axis=1)[:, 0],
    )


@dataclass
class SGLangOutcome:
    fail_once: np.ndarray  # the single-sample rule fails (any timing check)
    e2e_fail_once: np.ndarray
    fail_retried: np.ndarray  # fails on each of SGLANG_ATTEMPTS attempts
    attempts: np.ndarray


def simulate_sglang(pool: Pool, effect: Effect, checks: Checks, cand: np.ndarray, pick: np.ndarray) -> SGLangOutcome:
    """One request per attempt (``pick``: ``(trials, attempts)``), fail iff ``actual > limit`` on any check."""
    cm, cs = apply_effect(pool.metrics, pool.steps, effect)
    actual = np.stack(
        [metric_of(name, cm, cs)[cand, pick] for name in checks.names], axis=-1
    )  # (trials, attempts, checks)
    fails = actual > checks.limits[:, None, :]
    for t, sample in enumerate(checks.sample[:20]):  # the comparison is the engine's judge
        engine = [judge_check(c, float(actual[t, 0, i])).verdict == "fail" for i, c in enumerate(sample)]
        assert engine == list(fails[t, 0]), "vectorised rule differs from limits.judge_check"
    failed = np.asarray(fails.any(axis=-1), dtype=bool)
    passed_at = np.where((~failed).any(axis=1), np.argmax(~failed, axis=1) + 1, failed.shape[1])
    return SGLangOutcome(failed[:, 0], fails[:, 0, checks.names.index("e2e")], np.all(failed, axis=1), passed_at)


# ----------------------------------------------------------------------------------- coverage
def coverage(pool: Pool, ks: Iterable[int], m: int, trials: int, boots: int, seed: int) -> list[dict[str, Any]]:
    """A/A: how often a nominal 99 % interval on e2e excludes no change, per method and k process pairs."""
    rng = np.random.default_rng(seed)
    z = NormalDist().inv_cdf(0.995)
    noise = VerdictPolicy().e2e.noise
    rows: list[dict[str, Any]] = []
    for k in ks:
        base_p, cand_p, req = draw_ab(pool, trials, k, m, rng)
        e2e = pool.metrics["e2e"]
        d = np.log(e2e[cand_p[:, :, None], req] / e2e[base_p[:, :, None], req])
        ours = estimate(d, noise)
        lo, hi = ours.bounds(z)
        out_ours = float(((lo > 0) | (hi < 0)).mean())
        flat = d.reshape(trials, -1)  # every request pair iid: ignores the process pairs
        se_iid = math.sqrt(math.pi / 2) * flat.std(axis=1, ddof=1) / math.sqrt(flat.shape[1])
        med = np.median(flat, axis=1)
        out_iid = float(((med - z * se_iid > 0) | (med + z * se_iid < 0)).mean())
        # hierarchical bootstrap: process pairs with replacement, then request pairs within each
        out_boot = 0
        for t0 in range(0, trials, 200):
            dd = d[t0 : t0 + 200]
            b = dd.shape[0]
            pi = rng.integers(k, size=(b, boots, k))
            ri = rng.integers(m, size=(b, boots, k, m))
            picked = dd[np.arange(b)[:, None, None, None], pi[..., None], ri]
            stat = np.median(picked, axis=-1).mean(axis=-1)
            qlo, qhi = np.quantile(stat, [0.005, 0.995], axis=1)
            out_boot += int(((qlo > 0) | (qhi < 0)).sum())
        rows.append(
            {"k": k, "m": m, "ours": out_ours, "bootstrap": out_boot / trials, "iid": out_iid, "trials": trials}
        )
    return rows


# ----------------------------------------------------------------------------------------- live
@dataclass(frozen=True)
class LiveEffect:
    """A delay injected into the candidate's ``stage``: ``x`` of the measured e2e (``of_e2e``) or of the stage."""

    label: str
    stage: str | None = None
    x: float = 0.0
    of_e2e: bool = True

    def args(self, e2e_ms: float, stage_ms: Mapping[str, float]) -> str:
        if self.stage is None:
            return ""
        ms = self.x * (e2e_ms if self.of_e2e else stage_ms[self.stage])
        return f"--inject-delay {self.stage}={ms:.1f}"


LIVE_EFFECTS = [
    LiveEffect("none"),
    LiveEffect("e2e +5 % via DenoisingStage", DENOISING_STAGE, 0.05),
    LiveEffect("e2e +10 % via DenoisingStage", DENOISING_STAGE, 0.10),
    LiveEffect("e2e +20 % via DenoisingStage", DENOISING_STAGE, 0.20),
    LiveEffect("DecodingStage +10 %", DECODING_STAGE, 0.10, of_e2e=False),
]


def median_baseline(m: Measurement) -> ScenarioBaseline:
    """A stored baseline from one process's requests: every figure's median (timings only)."""
    steps = max(len(x) for x in m.steps)
    med = statistics.median
    return ScenarioBaseline(
        stages_ms={s: med(v) for s, v in sorted(m.stage_samples().items())},
        denoise_step_ms={str(i): med([x[i] for x in m.steps if len(x) > i]) for i in range(steps)},
        expected_e2e_ms=med(m.e2e_ms),
        expected_avg_denoise_ms=med([statistics.fmean(x) for x in m.steps]),
        expected_median_denoise_ms=med([med(x) for x in m.steps]),
        expected_load_ms=med(m.load_ms) if m.load_ms else None,
    )


def run_live(a: argparse.Namespace) -> int:
    """Live trials on the reference server: A/B, static mode and SGLang's rule on the same candidate servers."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the servers on kill, too
    cases = load_cases(REPO / "data" / "cases.json")
    case = cases[a.live_case].model_copy(update={"perf_warmup_requests": 1})
    launcher = get_launcher("reference")
    spec = ServerSpec.for_case(case, launcher.name)
    design, policy, spolicy, preset = ABDesign(), VerdictPolicy(), StaticPolicy(), get_preset("sglang")
    fractions = json.loads(BUNDLED_BASELINES.read_text())["sampling"]["step_fractions"]
    profiles = {"SGLang pr_test": SGLANG_PR_TEST, "bundled pr_test": bundled_tolerances("pr_test")}
    effects = [e for e in LIVE_EFFECTS if not a.live_effects or e.label in a.live_effects.split(",")]
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    aa_logs: dict[str, list[list[float]]] = {"e2e": [], stage_name(DENOISING_STAGE): []}
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        reference = ServerPool(Path(tmp) / "reference", 600, launcher=launcher)
        try:
            server = reference.get(spec)
            samples = measure(
                server, launcher, case.model_copy(update={"perf_repeat_requests": BASELINE_REQUESTS}), 600
            )
            records = [x.record for x in samples if x.record is not None]
            stored = Measurement.from_records(records, load_ms=server.load_ms)
        finally:
            reference.release()
        baseline = median_baseline(stored)
        e2e_ms, stage_ms = baseline.expected_e2e_ms, {k: v or 0.0 for k, v in baseline.stages_ms.items()}
        print(f"# bench_verdicts --live: case {case.id}, {a.live_trials} trials per effect, seed {a.seed}")
        print(f"- stored baseline: median of {BASELINE_REQUESTS} requests of one fresh server: e2e {e2e_ms:.1f} ms, "
              f"DenoisingStage {stage_ms[DENOISING_STAGE]:.1f} ms, DecodingStage {stage_ms[DECODING_STAGE]:.1f} ms")  # fmt: skip
        for effect in effects:
            args = effect.args(e2e_ms, stage_ms)
            sides: dict[Side, SideServer] = {
                "base": resolve_side("base", parse_side_spec("current", "live"), launcher, "live"),
                "candidate": resolve_side(
                    "candidate", parse_side_spec(f"args={args}" if args else "current", "live"), launcher, "live"
                ),
            }
            pools: dict[Side, ServerPool] = {
                side: ServerPool(Path(tmp) / effect.label.replace(" ", "_") / side, 600, launcher=sides[side].launcher)
                for side in SIDES
            }
            for trial in range(a.live_trials):
                servers = ABServers(sides, [pools], spec)
                try:
                    row = live_trial(servers, case, design_for(replace(design, seed=a.seed), f"{effect.label}:{trial}"),
                                     policy, spolicy, baseline, profiles, preset, fractions, aa_logs if effect.stage is None else None)  # fmt: skip
                finally:
                    servers.close()
                row.update({"effect": effect.label, "trial": trial, "candidate_args": args, "load": os.getloadavg()[0]})
                rows.append(row)
                print(f"  {effect.label} trial {trial + 1}: A/B {row['ab_verdict']} after {row['ab_requests']} requests "
                      f"({row['ab_wall_s']:.0f} s); static {row['static']['bundled pr_test']['verdict']}; "
                      f"SGLang {'fail' if row['sglang']['SGLang pr_test'] else 'pass'} ({time.monotonic() - t0:.0f} s)",
                      flush=True)  # fmt: skip
    print_live(rows, effects, profiles, a.live_trials, design)
    noise = {}
    for name, logs in aa_logs.items():
        if len(logs) >= 2:
            est = estimate_noise(logs)
            noise[name] = {"between": est.between, "within": est.within, "process_pairs": est.process_pairs}
            prior = policy.spec(name).noise
            print(f"- live A/A noise, {name}: between {est.between:.3f} (prior {prior.between}), "
                  f"within {est.within:.3f} (prior {prior.within}), {est.process_pairs} process pairs")  # fmt: skip
    print(f"\n(wall {time.monotonic() - t0:.0f} s)")
    if a.json:
        a.json.write_text(
            json.dumps({"case": case.id, "baseline": baseline.model_dump(), "rows": rows, "noise": noise}, indent=1)
        )
    return 0


def live_trial(
    servers: ABServers,
    case: Case,
    design: ABDesign,
    policy: VerdictPolicy,
    spolicy: StaticPolicy,
    baseline: ScenarioBaseline,
    profiles: Mapping[str, Tolerances],
    preset: Preset,
    fractions: Sequence[float],
    aa_logs: dict[str, list[list[float]]] | None,
) -> dict[str, Any]:
    """One trial: process pairs until A/B has stopped and static mode (on the candidate servers) too."""
    pairs: list[ProcessPairSamples] = []
    candidates: list[Measurement] = []
    static_cost: list[float] = []
    ab_result: ABResult | None = None
    ab_wall = 0.0
    static: dict[str, dict[str, Any]] = {}
    started = time.monotonic()
    while ab_result is None or len(static) < len(profiles):
        index = len(pairs)
        work = PairWork(case, design.orders(index), case.timeout_s or 600)
        (run,) = servers.measure_pair(index, [work], design.start_order(index))
        pairs.append(pair_samples(run))
        records = [x.record for x in run.samples["candidate"] if x.record is not None]
        candidates.append(Measurement.from_records(records, load_ms=run.load_ms["candidate"]))
        ready = next(s.ready_s or 0.0 for s in run.servers if s.side == "candidate")
        client = statistics.median(x.client_ms for x in run.samples["candidate"]) / 1000
        static_cost.append(ready + client * (len(records) + 1))  # its start, warmup and requests
        if ab_result is None:
            result = analyse(pairs, design, policy, denoising=pairs[-1].denoising or {DENOISING_STAGE})
            decision = design.decide(len(pairs), result.verdict)
            if decision.stop:
                ab_result, ab_wall = replace(result, stop=decision.reason), time.monotonic() - started
        for profile, tol in profiles.items():
            if profile not in static:
                rules = JudgeRules(tol, preset, tuple(fractions))
                judged = judge_noisy("live", baseline, candidates, rules, spolicy, sum(static_cost))
                if not judged.remeasure:
                    noise = judged.result.noise
                    named = noise.attribution.named if noise and noise.attribution else []
                    static[profile] = {
                        "verdict": judged.result.verdict,
                        "named": named,
                        "attempts": len(candidates),
                        "requests": sum(len(m.e2e_ms) for m in candidates),
                        "wall_s": sum(static_cost),
                    }
    first = candidates[0]  # SGLang's rule: the first measured request of the first fresh candidate server
    single = Measurement(first.e2e_ms[:1], first.steps[:1], first.stages[:1], first.denoising_stages, first.load_ms)
    sglang = {
        profile: any(
            r.verdict == "fail"
            for r in evaluate(baseline, single, JudgeRules(tol, preset, tuple(fractions)))
            if r.check.unit == "ms"
        )
        for profile, tol in profiles.items()
    }
    if aa_logs is not None:
        for name in aa_logs:
            for p in pairs:
                logs = [
                    math.log(c[name] / b[name])
                    for b, c in zip(p.base, p.candidate, strict=True)
                    if name in b and name in c
                ]
                aa_logs[name].append(logs)
    attribution = ab_result.attribution
    return {
        "ab_verdict": ab_result.verdict,
        "ab_named": list(attribution.named) if attribution and ab_result.verdict in ("regressed", "improved") else [],
        "ab_process_pairs": ab_result.process_pairs,
        "ab_requests": ab_result.requests,
        "ab_wall_s": ab_wall,
        "e2e_ratio": ab_result.metrics["e2e"].ratio,
        "static": static,
        "sglang": sglang,
        "process_pairs_run": len(pairs),
    }


# ------------------------------------------------------------------------------------- report
def ab_row(kind: str, effect: Effect, o: ABOutcome, m: int, e2e_ms: float, start_s: float) -> dict[str, Any]:
    n = len(o.verdicts)
    reg = o.verdicts == REGRESSED
    req = 2 * m * o.process_pairs
    return {
        "kind": kind,
        "effect": effect.label,
        "trials": n,
        "regressed": float(reg.mean()),
        "unchanged": float((o.verdicts == UNCHANGED).mean()),
        "improved": float((o.verdicts == IMPROVED).mean()),
        "inconclusive": float((o.verdicts == INCONCLUSIVE).mean()),
        "named": float((reg & o.named_target).mean()) if effect.target else None,
        "named_other": float((reg & o.named_other).mean()),
        "requests": float(req.mean()),
        "process_pairs": float(o.process_pairs.mean()),
        "wall_s": float((req * e2e_ms / 1000 + 2 * o.process_pairs * start_s).mean()),
        "noisy": float(o.noisy.mean()),
        "noisy_regressed": float((reg & o.noisy).mean()),
        "metric_regressed": o.metric_regressed,
    }


def print_ab(rows: Sequence[dict[str, Any]], title: str) -> None:
    print(f"\n### {title}\n")
    print(
        "| set | effect | regressed % [95 % CI] | stage named % | other stage named % | unchanged % | improved % | inconclusive % | requests (mean) | process pairs (mean) | est. wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        named_ = "-" if r["named"] is None else f"{100 * r['named']:.1f}"
        print(
            f"| {r['kind']} | {r['effect']} | {rate(r['regressed'], r['trials'])} | {named_} | {100 * r['named_other']:.1f} | "
            f"{100 * r['unchanged']:.1f} | {100 * r['improved']:.1f} | {100 * r['inconclusive']:.1f} | {r['requests']:.1f} | "
            f"{r['process_pairs']:.2f} | {r['wall_s']:.0f} |"
        )


def print_live(
    rows: Sequence[dict[str, Any]],
    effects: Sequence[LiveEffect],
    profiles: Mapping[str, Tolerances],
    trials: int,
    design: ABDesign,
) -> None:
    print(
        f"\n### Live: A/B (default design: m={design.request_pairs}, up to {design.process_pair_budget} process pairs), "
        f"static mode and SGLang's rule on the same candidate servers, {trials} trials per effect\n"
    )
    print("| effect | A/B regressed [95 % CI] | A/B stage named | A/B unchanged / inconclusive | A/B requests (mean) | A/B wall s (mean) | "
          + " | ".join(f"static {p}: fail / pass / inconclusive, named, requests, wall s | SGLang {p}: fail" for p in profiles) + " |")  # fmt: skip
    print("|---" * (6 + 2 * len(profiles)) + "|")
    for effect in effects:
        rs = [r for r in rows if r["effect"] == effect.label]
        if not rs:
            continue
        n = len(rs)
        reg = sum(r["ab_verdict"] == "regressed" for r in rs)
        lo, hi = wilson(reg / n, n)
        named_ = "-" if effect.stage is None else f"{sum(effect.stage in r['ab_named'] for r in rs)}/{n}"
        cells = [
            effect.label,
            f"{reg}/{n} [{100 * lo:.0f}, {100 * hi:.0f} %]",
            named_,
            f"{sum(r['ab_verdict'] == 'unchanged' for r in rs)} / {sum(r['ab_verdict'] == 'inconclusive' for r in rs)}",
            f"{statistics.fmean(r['ab_requests'] for r in rs):.1f}",
            f"{statistics.fmean(r['ab_wall_s'] for r in rs):.0f}",
        ]
        for p in profiles:
            st = [r["static"][p] for r in rs]
            named_s = "-" if effect.stage is None else f"{sum(effect.stage in x['named'] for x in st)}/{n}"
            counts = " / ".join(str(sum(x["verdict"] == v for x in st)) for v in ("fail", "pass", "inconclusive"))
            cells.append(
                f"{counts}, {named_s}, {statistics.fmean(x['requests'] for x in st):.1f}, {statistics.fmean(x['wall_s'] for x in st):.0f}"
            )
            cells.append(f"{sum(r['sglang'][p] for r in rs)}/{n}")
        print("| " + " | ".join(cells) + " |")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the noise study's data/ folder")
    ap.add_argument("--trials", type=int, default=20000, help="trials per mode, set and effect")
    ap.add_argument("--design-trials", type=int, default=4000, help="trials per cell of the design comparison")
    ap.add_argument("--coverage-trials", type=int, default=2000)
    ap.add_argument("--boots", type=int, default=500, help="bootstrap resamples in the coverage comparison")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--static-requests", type=int, default=10, help="requests per attempt in static mode")
    ap.add_argument("--start-s", type=float, default=9.6, help="seconds to start one server (estimated wall time)")
    ap.add_argument(
        "--designs",
        default="4x10,5x8,8x5,10x4,20x2,30x1",
        help="m x max process pairs to compare (at most 80 requests each)",
    )
    ap.add_argument("--sections", default="noise,ab,stress,sequential,designs,static,coverage")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument(
        "--live", action="store_true", help="run reference servers with --inject-delay instead of resampling"
    )
    ap.add_argument("--live-trials", type=int, default=4, help="live trials per effect")
    ap.add_argument("--live-case", default="flux_tiny_t2i", help="the bundled case the live trials serve")
    ap.add_argument("--live-effects", default="", help="comma-separated effect labels (default: all)")
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds' run at the smallest size (CI checks that the script still runs)",
    )
    a = ap.parse_args(argv)
    if a.smoke:
        a.trials, a.design_trials, a.coverage_trials, a.boots, a.live_trials = 20, 10, 10, 10, 1
        a.designs = "4x10"
    if a.live:
        return run_live(a)
    sections = set(a.sections.split(","))
    rows: list[dict[str, Any]]
    t0 = time.monotonic()
    pools = {kind: ab_pool(a.data, kind) for kind in ("flux", "sd")}
    out: dict[str, Any] = {"trials": a.trials, "seed": a.seed}
    print(f"# bench_verdicts: {a.trials} trials per cell, seed {a.seed}, data {a.data}")
    for kind, pool in pools.items():
        print(
            f"- {kind}: {int(pool.session.max()) + 1} A/B sessions x {pool.requests} request pairs, median e2e {np.median(pool.metrics['e2e']):.0f} ms, {len(pool.loads_ms)} load times"
        )

    if "noise" in sections:
        print("\n### Noise the A/A sessions show (estimate_noise) vs the default priors\n")
        print("| set | metric | between (offset sd) | within (request pair sd) | prior between | prior within |")
        print("|---|---|---|---|---|---|")
        policy = VerdictPolicy()
        rows = []
        for kind, pool in pools.items():
            for name in ("e2e", DENOISE, DECODE, stage_name(TEXT_ENCODING_STAGE), "median_denoise"):
                v = pool.metrics[name]
                est = estimate_noise(
                    [list(np.log(v[2 * s + 1] / v[2 * s])) for s in range(int(pool.session.max()) + 1)]
                )
                prior: Noise = policy.spec(name).noise
                rows.append({"kind": kind, "metric": name, "between": est.between, "within": est.within})
                print(
                    f"| {kind} | {name} | {est.between:.3f} | {est.within:.3f} | {prior.between:.3f} | {prior.within:.3f} |"
                )
        out["noise"] = rows

    design, policy = ABDesign(), VerdictPolicy()
    if "ab" in sections:
        rows = []
        for kind, pool in pools.items():
            e2e_ms = float(np.median(pool.metrics["e2e"]))
            for i, effect in enumerate(EFFECTS):
                o = simulate_ab(pool, effect, design, policy, a.trials, a.seed + i)
                rows.append(ab_row(kind, effect, o, design.request_pairs, e2e_ms, a.start_s))
        print_ab(
            rows,
            f"A/B, default design (m={design.request_pairs} request pairs per process pair, up to {design.process_pair_budget} process pairs, {design.max_requests} requests), {a.trials} trials per row",
        )
        print("\nPer-metric `regressed` at the stop (no change; metrics not gated by default are informational):\n")
        for r in rows:
            if r["effect"] == "none":
                print(f"- {r['kind']}: " + ", ".join(f"{k} {100 * v:.2f} %" for k, v in r["metric_regressed"].items()))
        out["ab"] = rows

    if "stress" in sections:
        rows = []
        for kind, pool in pools.items():
            for scale in (1.0, 1.5, 2.0, 3.0):
                o = simulate_ab(pool, EFFECTS[0], design, policy, a.trials, a.seed + 50, noise_scale=scale)
                rows.append({"scale": scale, **ab_row(kind, EFFECTS[0], o, design.request_pairs, 0.0, 0.0)})
        print(
            f"\n### A/A on a noisier machine than the priors: recorded log ratios x scale, default design, {a.trials} trials\n"
        )
        print(
            "| set | noise x | regressed % [95 % CI] | flagged noisier than calibrated % | regressed and not flagged % | unchanged % | inconclusive % | requests |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['kind']} | {r['scale']:g} | {rate(r['regressed'], r['trials'])} | {100 * r['noisy']:.1f} | "
                f"{100 * (r['regressed'] - r['noisy_regressed']):.2f} | {100 * r['unchanged']:.1f} | {100 * r['inconclusive']:.1f} | {r['requests']:.1f} |"
            )
        out["stress"] = rows
        rows = []
        small = ABDesign(request_pairs=1, max_process_pairs=2, max_requests=4)
        busy = busy_machine(policy)
        busy_designs = (("default", design), ("m=1, k=2", small))
        for kind, pool in pools.items():
            for (dlabel, d), scale, effect in itertools.product(
                busy_designs, (1.0, 2.0, 4.0), (EFFECTS[0], EFFECTS[3], EFFECTS[-1])
            ):
                o = simulate_ab(pool, effect, d, busy, a.trials, a.seed + 60, noise_scale=scale)
                rows.append({"scale": scale, "design": dlabel, **ab_row(kind, effect, o, d.request_pairs, 0.0, 0.0)})
        print(
            f"\n### A/B measured busy: priors x{BUSY_NOISE:g} (verdicts.metrics.busy_machine), recorded log ratios x "
            f"scale, {a.trials} trials\n"
        )
        print(
            "| set | design | noise x | effect | regressed % [95 % CI] | improved % | unchanged % | inconclusive % | process pairs |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['kind']} | {r['design']} | {r['scale']:g} | {r['effect']} | {rate(r['regressed'], r['trials'])} | "
                f"{100 * r['improved']:.2f} | {100 * r['unchanged']:.1f} | {100 * r['inconclusive']:.1f} | "
                f"{r['process_pairs']:.1f} |"
            )
        out["busy"] = rows

    if "sequential" in sections:
        rows = []
        designs = [("m=1, k=2", ABDesign(request_pairs=1, max_process_pairs=2, max_requests=4)), ("default", design)]
        priors = [("side-by-side", policy), ("one-at-a-time", one_at_a_time(policy))]
        for kind in ("flux", "sd"):
            pool = single_pool(a.data, kind)
            e2e_ms = float(np.median(pool.metrics["e2e"]))
            for (dlabel, d), (plabel, p) in ((x, y) for x in designs for y in priors):
                for i, effect in enumerate(
                    e for e in EFFECTS if e.label in ("none", "e2e +20 % via denoise", "e2e x2 via denoise")
                ):
                    o = simulate_ab(pool, effect, d, p, a.trials, a.seed + 300 + i, draw=draw_sequential)
                    rows.append(
                        {
                            "design": dlabel,
                            "priors": plabel,
                            **ab_row(kind, effect, o, d.request_pairs, e2e_ms, a.start_s),
                        }
                    )
        print(
            f"\n### One server at a time (`--diffperf-ab-servers one-at-a-time`): the single-process sets' processes paired, {a.trials} trials per row\n"
        )
        print(
            "| set | design | priors | effect | regressed % [95 % CI] | improved % [95 % CI] | unchanged % | inconclusive % | requests |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['kind']} | {r['design']} | {r['priors']} | {r['effect']} | {rate(r['regressed'], r['trials'])} | {rate(r['improved'], r['trials'])} | {100 * r['unchanged']:.1f} | {100 * r['inconclusive']:.1f} | {r['requests']:.1f} |"
            )
        out["sequential"] = rows

    if "designs" in sections:
        rows = []
        for spec in a.designs.split(","):
            m, k = (int(x) for x in spec.split("x"))
            d = ABDesign(request_pairs=m, max_process_pairs=k, max_requests=2 * m * k, min_process_pairs=min(2, k))
            for kind, pool in pools.items():
                e2e_ms = float(np.median(pool.metrics["e2e"]))
                for i, effect in enumerate(
                    e for e in EFFECTS if e.label in ("none", "e2e +10 % via denoise", "DenoisingStage +10 %")
                ):
                    o = simulate_ab(pool, effect, d, policy, a.design_trials, a.seed + 100 + i)
                    rows.append({"design": spec, **ab_row(kind, effect, o, m, e2e_ms, a.start_s)})
        print(f"\n### A/B designs within the 80-request budget ({a.design_trials} trials per row)\n")
        print(
            "| m x k | set | effect | regressed % | stage named % | unchanged % | inconclusive % | requests | process pairs | est. wall s |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            named_ = "-" if r["named"] is None else f"{100 * r['named']:.1f}"
            print(
                f"| {r['design']} | {r['kind']} | {r['effect']} | {rate(r['regressed'], r['trials'])} | {named_} | {100 * r['unchanged']:.1f} | {100 * r['inconclusive']:.1f} | {r['requests']:.1f} | {r['process_pairs']:.2f} | {r['wall_s']:.0f} |"
            )
        out["designs"] = rows

    if "static" in sections:
        spolicy = StaticPolicy()
        rows = []
        sets = [("A/B processes", kind, pool) for kind, pool in pools.items()]
        sets += [("single-process sets", kind, single_pool(a.data, kind)) for kind in ("flux", "sd")]
        profiles = [
            ("SGLang pr_test", SGLANG_PR_TEST, a.static_requests),
            ("bundled pr_test", bundled_tolerances("pr_test"), BUNDLED_REQUESTS),
        ]
        for profile, tolerances, n_requests in profiles:
            for label, kind, pool in sets:
                rng = np.random.default_rng(a.seed + 1000)
                attempts = max(SGLANG_ATTEMPTS, spolicy.max_attempts)
                base_p, base_start, cand, req = draw_static(pool, a.trials, attempts, n_requests, rng)
                checks = baseline_checks(pool, base_p, base_start, tolerances)
                pick = rng.integers(pool.requests, size=cand.shape)
                e2e_ms = float(np.median(pool.metrics["e2e"]))
                for effect in EFFECTS:
                    so = simulate_static(
                        pool, effect, checks, cand[:, : spolicy.max_attempts], req[:, : spolicy.max_attempts], spolicy
                    )
                    go = simulate_sglang(pool, effect, checks, cand[:, :SGLANG_ATTEMPTS], pick[:, :SGLANG_ATTEMPTS])
                    n = a.trials
                    rows.append(
                        {
                            "profile": profile,
                            "requests_per_attempt": n_requests,
                            "set": label,
                            "kind": kind,
                            "effect": effect.label,
                            "trials": n,
                            "checks": len(checks.names),
                            "static_fail": float((so.verdicts == FAIL).mean()),
                            "static_pass": float((so.verdicts == PASS).mean()),
                            "static_inconclusive": float((so.verdicts == STATIC_VERDICTS.index("inconclusive")).mean()),
                            "static_e2e_fail": float(so.e2e_fail.mean()),
                            "static_requests": float(so.requests.mean()),
                            "static_attempts": float(so.attempts.mean()),
                            "static_point_checks": float(so.point.mean()),
                            "static_wall_s": float((so.requests * e2e_ms / 1000 + so.attempts * a.start_s).mean()),
                            "sglang_fail": float(go.fail_once.mean()),
                            "sglang_e2e_fail": float(go.e2e_fail_once.mean()),
                            "sglang_retried_fail": float(go.fail_retried.mean()),
                            "sglang_attempts": float(go.attempts.mean()),
                        }
                    )
        print(
            f"\n### Static mode and SGLang's rule against a stored baseline (median of {BASELINE_REQUESTS} requests of another process), {a.trials} trials per row\n"
        )
        print(
            f"Static: n requests per fresh server (SGLang pr_test: {a.static_requests}; the bundled suite's profile: {BUNDLED_REQUESTS}, as its cases), re-measured on up to {spolicy.max_attempts} servers while `remeasure` says so, all {rows[0]['checks']} timing checks of `plan_checks`. SGLang: one request; retried: fails only if {SGLANG_ATTEMPTS} attempts all fail.\n"
        )
        print(
            "| tolerances | data | set | effect | static fail % [95 % CI] | static pass % | static inconclusive % | static requests | fresh servers | checks by point value | SGLang fail % (any check) | SGLang e2e check fail % | SGLang with retries fail % |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['profile']} | {r['set']} | {r['kind']} | {r['effect']} | {rate(r['static_fail'], r['trials'])} | {100 * r['static_pass']:.1f} | {100 * r['static_inconclusive']:.1f} | {r['static_requests']:.1f} | {r['static_attempts']:.2f} | {r['static_point_checks']:.1f} | {rate(r['sglang_fail'], r['trials'])} | {100 * r['sglang_e2e_fail']:.1f} | {100 * r['sglang_retried_fail']:.1f} |"
            )
        out["static"] = rows

    if "coverage" in sections:
        rows = []
        for kind, pool in pools.items():
            for r in coverage(pool, (1, 2, 3, 5, 10), 4, a.coverage_trials, a.boots, a.seed + 2000):
                rows.append({"kind": kind, **r})
        print(
            f"\n### Why not a bootstrap: A/A, how often a nominal 99 % interval on e2e excludes no change (should be ~1 %), m=4, {a.coverage_trials} trials\n"
        )
        print(
            "| set | process pairs k | ours (moderated variance) % | hierarchical bootstrap % | request pairs as iid % |"
        )
        print("|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['kind']} | {r['k']} | {100 * r['ours']:.2f} | {100 * r['bootstrap']:.2f} | {100 * r['iid']:.2f} |"
            )
        out["coverage"] = rows

    print(f"\n(wall {time.monotonic() - t0:.0f} s)")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
