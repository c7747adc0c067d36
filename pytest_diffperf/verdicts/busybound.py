"""The slowdown a busy machine can explain: a fail beyond it is the code's, however busy the machine was.

Other processes slow a measurement only by taking CPU time it wanted: while a server's thread is runnable and
waits for a CPU (Linux counts that wait per thread, ``schedstat``). A request whose server threads waited
``wait_ms`` in all took at least ``wall_ms - wait_ms`` alone (every wait on its critical path, as if the threads
ran one after another: the most the wait can cost), so the busy machine explains at most
``wall_ms / (wall_ms - wait_ms)`` of a figure of ``wall_ms``. Every CPU-bound millisecond was stretched by
``1 + wait_ms / cpu_ms`` on average, what the request spent asleep, on I/O or on an injected delay not at all,
so the whole figure never by more than that stretch: it caps the bound where the wait exceeds the wall (threads
that waited side by side). Where the kernel exposes no wait, fair-share scheduling estimates it from the load
average: ``load`` runnable threads on ``cpus`` CPUs give a runnable thread ``cpus / load`` of a CPU, a stretch
of ``max(1, load / cpus)``, and a wait of ``cpu_ms`` times the stretch less 1. Memory peaks do not depend on
the load: their bound is 1.

A baseline recorded on a loaded machine holds its own wait already: with the (CPU ms, wait ms) of the request its
figures came from, only the run's wait beyond that wait is allowed (the same share of the wait on the critical path
in both; see the docs; the judging nets it from e2e alone, where it fits in the baseline's e2e). The stretch cap
stays the run's own: CPU time itself grows under contention (caches, a shared core: 170 ms quiet, 200 ms beside
two burners), so dividing it by the baseline's stretch failed no change. That growth is no wait, so the wait alone
does not explain it: the median request's CPU time over the baseline's request's is allowed on top, up to
``CPU_GROWTH_CAP`` (more CPU time than that is more work, the code's). Old baselines without it are bounded as
above, with no growth allowed.

A check failed busy whose lower interval end lies beyond its limit times that bound fails; within it, it is
inconclusive (machine busy). The derivation and its measurement: docs/verdicts.md, "A busy machine".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

# The most the same work's CPU time grows under contention, as the median request sees it: bench_busy's unchanged
# scenario took 170 ms of server CPU in its baseline's request and a median of up to 210-215 ms in runs beside other
# jobs and burners (x1.26; single requests up to 240 ms), docs/benchmarks.md, "The busy-machine bound"; every
# request's figures: benchmarks/results/bench_busy-2026-12-06-*.json.gz.
CPU_GROWTH_CAP = 1.3


def contention(load: float, cpus: int) -> float:
    """How many times as long a CPU-bound thread takes with ``load`` runnable threads on ``cpus`` CPUs (at least 1)."""
    return max(1.0, load / cpus) if cpus > 0 and math.isfinite(load) else 1.0


def cpu_delay_ms(cpu_ms: Iterable[float | None], factor: float) -> float | None:
    """The longest a request can have waited for a CPU: the median request's server CPU time times
    ``factor - 1`` (None when no request's CPU time was read)."""
    known = [c for c in cpu_ms if c is not None]
    return statistics.median(known) * (factor - 1) if known else None


def explained(wall_ms: float | None, delay_ms: float | None, factor: float) -> float:
    """The slowdown the busy machine explains of a figure of ``wall_ms`` measured at ``factor`` contention,
    the requests having waited at most ``delay_ms`` for a CPU (None: not known, ``factor`` alone)."""
    if wall_ms is None or delay_ms is None or wall_ms <= delay_ms:
        return factor
    return min(factor, wall_ms / (wall_ms - delay_ms))


def beyond(low: float | None, limit: float, bound: float) -> bool:
    """Whether a check's lower interval end (or its value) lies beyond ``limit`` times the machine's ``bound``."""
    return low is not None and low > limit * bound


def peak_contention(loads: Sequence[tuple[float, int]]) -> float:
    """The largest contention over measurement windows of (1-minute load average, CPUs)."""
    return max((contention(load, cpus) for load, cpus in loads), default=1.0)


def stretch(cpu_ms: float, wait_ms: float) -> float:
    """How many times as long as its CPU time a request's CPU-bound part took: time runnable over time running."""
    return 1 + wait_ms / cpu_ms if cpu_ms > 0 else 1.0


def stretch_and_wait(
    requests: Sequence[tuple[float | None, float | None]],
    loads: Sequence[tuple[float, int]],
    own_wait_ms: float | None = None,
) -> tuple[float, float | None]:
    """The stretch of CPU-bound time and the wait for a CPU to allow for, over requests of (server CPU ms, wait
    ms): the median request's, as the checks judge the median request (else estimated from the ``loads``).

    ``own_wait_ms``: the baseline's wait, of the request its figures came from: it is in them already, so a
    measured wait is allowed only beyond it (an estimated one whole); the stretch stays the run's."""
    measured = [(cpu, wait) for cpu, wait in requests if cpu is not None and wait is not None]
    if measured:
        factor = statistics.median(stretch(cpu, wait) for cpu, wait in measured)
        waited = statistics.median(wait for _, wait in measured)
        return factor, waited if own_wait_ms is None else max(0.0, waited - own_wait_ms)
    factor = peak_contention(loads)
    return factor, cpu_delay_ms([cpu for cpu, _ in requests], factor)


def cpu_growth(cpu_ms: Iterable[float | None], own_cpu_ms: float | None) -> float:
    """How much longer the median request's server CPU time was than the baseline's request's, at least 1, at most
    ``CPU_GROWTH_CAP`` (1 when either is not known)."""
    known = [c for c in cpu_ms if c is not None]
    if not known or own_cpu_ms is None or own_cpu_ms <= 0:
        return 1.0
    return min(CPU_GROWTH_CAP, max(1.0, statistics.median(known) / own_cpu_ms))
