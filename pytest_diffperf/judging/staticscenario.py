"""Static mode's measure-until-decisive loop: a scenario judged against its stored baseline, measured again on
fresh servers while the judge asks, or after a fail judged on busy attempts alone once the machine is quiet.

The pytest item (``suite/items.py``) makes the first attempt on its server and calls :func:`judge_static`;
A/B's loop is :class:`~pytest_diffperf.judging.abscenario.GroupAB`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..cases import Case
from ..perf.limits import JudgeRules
from ..perf.measurement import Measurement
from ..perf.schema import ScenarioBaseline
from ..results.model import InterferenceEffect, ScenarioResult
from ..serving.interference import Interference, Quiet, Watch
from ..serving.launchers import Launcher, ServerSpec
from ..serving.measure import Sample, measure
from ..serving.pool import ServerPool
from ..serving.process import ServerProcess
from ..verdicts.static import StaticPolicy
from .interference import beyond_busy, fails_busy, machine_busy
from .noisy import judge_noisy
from .verdict import case_rules, judge_requests, measurement_of


@dataclass(frozen=True)
class Attempt:
    """One fresh server's measurement of a case, and what other processes took meanwhile."""

    samples: list[Sample]
    measurement: Measurement
    window: Interference


@dataclass(frozen=True)
class Judged:
    """A static scenario judged over its attempts: the result, the attempts it was judged on, and the interference."""

    result: ScenarioResult
    used: list[Attempt]
    attempts: list[Attempt]
    effect: InterferenceEffect | None
    waited_s: float


class StaticServers:
    """A static scenario's servers: the one its first attempt ran on, then a fresh one from the pool per attempt."""

    def __init__(
        self,
        pool: ServerPool,
        spec: ServerSpec,
        launcher: Launcher,
        watch: Watch,
        case: Case,
        timeout_s: float,
        server: ServerProcess,
    ) -> None:
        self.pool, self.spec, self.launcher, self.watch = pool, spec, launcher, watch
        self.case, self.timeout_s = case, timeout_s
        self.server = server  # the latest one (its log for a failure's message, its record for the result)

    def fresh(self) -> Attempt:
        """The case measured again on a fresh server."""
        self.pool.release()
        meter = self.watch.meter(self.spec.num_gpus)
        self.server = self.pool.get(self.spec)
        samples = measure(self.server, self.launcher, self.case, self.timeout_s)
        return Attempt(samples, measurement_of(samples, self.case, self.server.load_ms), meter.stop())

    def wait_quiet(self) -> Quiet:
        """The pool's server stopped, then a wait for a quiet machine (at most what is left of the run's budget)."""
        self.pool.release()
        return self.watch.wait_quiet(self.spec.num_gpus, self.pool.progress)


@dataclass(frozen=True)
class StaticScenario:
    """What a scenario is judged by against its stored baseline: the run's rules and static mode's noise policy
    (None: SGLang's rule, the latest measurement alone)."""

    name: str
    case: Case
    baseline: ScenarioBaseline
    rules: JudgeRules
    noisy: StaticPolicy | None


def judge_static(scenario: StaticScenario, servers: StaticServers, first: Attempt, measure_s: float) -> Judged:
    """Judged against the stored baseline: with the run's noise (``judging.noisy``: re-measured on fresh servers
    while ``verdicts.static.remeasure`` says so) where the case has 2+ requests, else by the limit engine alone.

    Attempts measured while the machine was busy (``BusyPolicy.busy``) are judged only when no quiet one
    exists; a fail judged on busy attempts alone fails where it lies beyond what the busy machine explains
    (``verdicts.busybound``), else is measured again once the machine is quiet (``--diffperf-quiet-wait``),
    else it is inconclusive (machine busy).
    """
    case = scenario.case
    rules = case_rules(scenario.rules, case)
    started = time.monotonic() - measure_s
    noisy = scenario.noisy if case.perf_repeat_requests >= 2 else None

    def judge(attempts: Sequence[Attempt]) -> tuple[ScenarioResult, bool]:
        if noisy is None:  # SGLang's rule: the latest measurement alone
            measured = attempts[-1].measurement
            return judge_requests(scenario.name, scenario.baseline, measured, rules, case.judged_requests), False
        measurements = [a.measurement for a in attempts]
        judged = judge_noisy(scenario.name, scenario.baseline, measurements, rules, noisy, time.monotonic() - started)
        return judged.result, judged.remeasure

    return _attempts(servers, first, judge, noisy.max_attempts if noisy is not None else 1, scenario.baseline.own_wait)


def _attempts(
    servers: StaticServers,
    first: Attempt,
    judge: Callable[[Sequence[Attempt]], tuple[ScenarioResult, bool]],
    max_attempts: int,
    own: tuple[float, float] | None = None,
) -> Judged:
    """Judge the quiet attempts (all of them when none is quiet); measure again while ``judge`` asks, or
    after a fail judged on busy attempts alone, once the machine is quiet; at most ``2 * max_attempts``
    servers, ``--diffperf-quiet-wait`` seconds of waiting in the whole run (``Watch.budget``). ``own``: the
    baseline's (CPU ms, wait ms), the wait its figures hold already (``verdicts.busybound``)."""
    watch = servers.watch
    policy = watch.policy
    attempts, waited, remeasured, why = [first], 0.0, False, ""
    while True:
        quiet = [a for a in attempts if not policy.busy(a.window)]
        used = quiet or attempts
        result, again = judge(used)
        requests = [(s.cpu_ms, s.wait_ms) for a in used for s in a.samples]
        over = beyond_busy(result, [a.window for a in used], requests, own)
        busy_fail = result.verdict == "fail" and not quiet and over is None
        if busy_fail:
            if len(attempts) >= 2 * max_attempts or watch.quiet_left_s <= 0:
                why = f"busy on {len(attempts)} fresh server(s), {waited:.0f} s waited for quiet"
                why += "" if watch.quiet_left_s > 0 else f"; the run's {policy.wait_s:.0f} s of waiting spent"
                break
            found = servers.wait_quiet()
            waited += found.waited_s
            if not found.found:
                why = f"not quiet within {found.waited_s:.0f} s, the run's {policy.wait_s:.0f} s of waiting"
                break
            remeasured = True
        elif not again or len(attempts) >= 2 * max_attempts:
            break
        attempts.append(servers.fresh())
    effect: InterferenceEffect | None = "remeasured" if remeasured else None
    if busy_fail:
        machine_busy(result, [a.window for a in attempts], policy, why)
        effect = "inconclusive"
    elif result.verdict == "fail" and not quiet and over is not None:
        fails_busy(result, over, [a.window for a in used])
    return Judged(result, used, attempts, effect, waited)
