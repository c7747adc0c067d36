"""Interference in the results: each measurement window's figures, a fail measured busy made inconclusive
(static, and A/B one server at a time) unless it lies beyond what the busy machine explains
(:mod:`pytest_diffperf.verdicts.busybound`), and the run's one line (the terminal summary and the provenance)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..perf.limits import MEMORY_KINDS
from ..results.model import (
    DeviceHolderRecord,
    InterferenceEffect,
    InterferenceRecord,
    InterferenceWindowRecord,
    OutsideProcessRecord,
    ScenarioResult,
)
from ..serving.interference import BusyPolicy, Interference
from ..verdicts.busybound import beyond, cpu_growth, explained, stretch_and_wait
from .verdict import PERF_PREFIX

NEXT = (
    "next: run it A/B (--diffperf-base=SPEC: both sides share the load), on a quiet runner, or with a longer "
    "--diffperf-quiet-wait; --diffperf-busy-share sets what counts as busy"
)
NEXT_ONE_AT_A_TIME = (
    "next: run both sides together (--diffperf-ab-servers=together) where the device holds two servers, or on "
    "a quiet runner; --diffperf-busy-share sets what counts as busy"
)


def window_record(window: Interference, policy: BusyPolicy) -> InterferenceWindowRecord:
    return InterferenceWindowRecord(
        wall_s=round(window.wall_s, 2),
        cpus=window.cpus,
        outside_cpu_s=round(window.outside_cpu_s, 2),
        cpu_share=round(window.cpu_share, 3),
        device_share=round(window.device_share, 3),
        load_avg=[round(x, 2) for x in window.load_avg],
        busy=policy.busy(window),
        top=[OutsideProcessRecord(pid=p.pid, name=p.name, cpu_s=p.cpu_s) for p in window.top],
        devices=[
            DeviceHolderRecord(
                device=h.device,
                pid=h.process.pid,
                name=h.process.name,
                memory_mib=h.process.memory_mib,
                memory_total_mib=h.memory_total_mib,
            )
            for h in window.holders
        ],
    )


def interference_record(
    windows: Sequence[Interference], policy: BusyPolicy, effect: InterferenceEffect | None = None, waited_s: float = 0
) -> InterferenceRecord:
    """The record of ``windows``; ``effect`` by default ``kept`` when one was busy, else ``none``."""
    busy = any(policy.busy(w) for w in windows)
    return InterferenceRecord(
        threshold=policy.share,
        effect=effect or ("kept" if busy else "none"),
        waited_s=round(waited_s, 1),
        windows=[window_record(w, policy) for w in windows],
    )


def figures(window: Interference) -> str:
    """``other processes used 61% of 2 CPUs, load average 4.20`` (and who holds a device)."""
    text = f"other processes used {window.cpu_share:.0%} of {window.cpus} CPUs, load average {window.load_avg[0]:.2f}"
    return text + "".join(f"; {h.text()}" for h in window.holders)


def measured_busy(record: InterferenceRecord | None, pairs: int = 0) -> str | None:
    """Why a scenario's figures are no baseline: ``measured busy (other processes used 86% of 2 CPUs, load average
    7.90; 2 of 2 measurements over 25%)``; None when it was measured quiet (or not watched). ``pairs``: an A/B
    run's process pairs measured busy."""
    busy = [w for w in record.windows if w.busy] if record is not None else []
    if not busy and not pairs:
        return None
    if not busy:
        return f"measured busy ({pairs} process pair(s) measured while other processes took the machine)"
    assert record is not None
    peak = max(busy, key=lambda w: max(w.cpu_share, w.device_share))
    held = f", {peak.device_share:.0%} of a device's memory" if peak.device_share else ""
    over = f" over {record.threshold:.0%}" if record.threshold is not None else ""
    return (
        f"measured busy (other processes used {peak.cpu_share:.0%} of {peak.cpus} CPUs{held}, load average "
        f"{peak.load_avg[0]:.2f}; {len(busy)} of {len(record.windows)} measurement(s){over})"
    )


def machine_busy(
    result: ScenarioResult, windows: Sequence[Interference], policy: BusyPolicy, why: str, next_step: str = NEXT
) -> None:
    """Make a fail measured while the machine was busy ``inconclusive (machine busy: ...)``; its failure text kept below."""
    peak = max(windows, key=lambda w: w.share)
    failed = "\n".join(f"    {line}" for line in result.message.splitlines())
    result.verdict = "inconclusive"
    result.message = (
        f"{PERF_PREFIX} inconclusive (machine busy: {figures(peak)}; {why})\n"
        f"  busiest measurement: {peak.text()}\n"
        f"  measured on a busy machine (over {policy.share:.0%} of its CPUs or a device taken by other processes), "
        f"it would have failed:\n{failed}\n  {next_step}"
    )


@dataclass(frozen=True)
class Beyond:
    """A check failed busy beyond the slowdown the busy machine explains (``bound``)."""

    check: str
    low: float
    limit: float
    bound: float
    own_wait_ms: float | None = None  # the baseline's own wait for a CPU, not allowed twice


def _failing(result: ScenarioResult) -> list[tuple[str, float | None, float | None, float, str | None]]:
    """The failing checks: name, lower end (the value where judged without noise or by point value), value, limit,
    kind."""
    kinds = {c.name: c.kind for c in result.checks}
    noisy = {c.name: c for c in result.noise.checks} if result.noise is not None else {}
    found: list[tuple[str, float | None, float | None, float, str | None]] = [
        (
            c.name,
            c.actual if c.judged_by == "point value" else c.low,
            c.actual,
            c.limit,
            kinds.get(c.name),
        )
        for c in noisy.values()
        if c.verdict == "fail"
    ]
    found += [
        (c.name, c.actual, c.actual, c.limit, c.kind)
        for c in result.checks
        if c.verdict == "fail" and c.name not in noisy
    ]
    return found


def beyond_busy(
    result: ScenarioResult,
    windows: Sequence[Interference],
    requests: Sequence[tuple[float | None, float | None]],
    own: tuple[float, float] | None = None,
) -> Beyond | None:
    """The first failing check beyond the slowdown the busy ``windows`` explain, the requests having spent (CPU
    ms, ms waiting for a CPU) of the server's (None: every fail lies within it).

    The baseline's ``own`` wait is netted from e2e's alone, and only where it is less than the baseline's e2e (its
    threads may have waited on the critical path): a part of a request (a step, a stage) cannot tell where in the
    request the baseline waited, and a wait summed over threads side by side is off that path (a baseline that
    waited 1540 ms in a 608 ms request, on steps 1 and 3, failed no change on step 2). The server's load is no part
    of a request: it is allowed the requests' stretch alone (``explained`` would set their milliseconds of waiting
    against its seconds). Every timing check is allowed the growth of the requests' CPU time over the baseline's
    request's on top (``busybound.cpu_growth``): the same work takes more CPU time on a contended machine."""
    loads = [(w.load_avg[0], w.cpus) for w in windows]
    factor, delay = stretch_and_wait(requests, loads)
    growth = cpu_growth([cpu for cpu, _ in requests], own[0] if own is not None else None)
    expected_e2e = next((c.expected for c in result.checks if c.kind == "e2e"), None)
    measured = any(cpu is not None and wait is not None for cpu, wait in requests)  # else estimated: allowed whole
    netted = own[1] if measured and own is not None and expected_e2e is not None and own[1] < expected_e2e else None
    net_delay = delay if netted is None else stretch_and_wait(requests, loads, netted)[1]
    for name, low, value, limit, kind in _failing(result):
        if kind in MEMORY_KINDS:
            bound = 1.0
        elif kind == "load":
            bound = factor * growth
        elif kind == "e2e":
            bound = explained(value, net_delay, factor) * growth
        else:
            bound = explained(value, delay, factor) * growth
        if beyond(low, limit, bound):
            assert low is not None
            return Beyond(name, low, limit, bound, netted if kind == "e2e" else None)
    return None


def fails_busy(result: ScenarioResult, over: Beyond, windows: Sequence[Interference]) -> None:
    """Say in a fail measured busy that it fails even allowing for the busy machine, and how busy it was."""
    peak = max(windows, key=lambda w: w.share)
    head, _, rest = result.message.partition("\n")
    allowing = f"fails even allowing x{over.bound:.1f} for the busy machine"
    result.message = (
        f"{head}; {allowing}\n{rest}\n  measured on a busy machine ({figures(peak)}): {over.check} "
        f"{over.low:g} is beyond its limit {over.limit:g} x{over.bound:.2f}, the most the load explains"
        + (f" beyond the baseline's own {over.own_wait_ms:g} ms of waiting for a CPU" if over.own_wait_ms else "")
    )


def ab_interference(
    result: ScenarioResult, windows: Sequence[Interference], policy: BusyPolicy, together: bool
) -> None:
    """Record what outside processes took while the scenario's process pairs measured.

    Side by side (``together``) both sides share the load (judged with the busy machine's wider priors,
    ``GroupAB``): the verdict is kept. One server at a time, a busy phase lands on one side, so a
    ``regressed`` measured while the machine was busy is inconclusive (machine busy), as a static fail
    is; a memory fail (peaks do not depend on load) is kept.
    """
    busy = [w for w in windows if policy.busy(w)]
    timing_fail = (
        result.ab is not None and result.ab.verdict == "regressed" and all(c.verdict != "fail" for c in result.checks)
    )
    effect: InterferenceEffect | None = None
    over = _ab_beyond(result, windows) if busy and not together and timing_fail else None
    if over is not None:
        fails_busy(result, over, windows)
    elif busy and not together and timing_fail:
        why = f"one server at a time, busy on {len(busy)} of {len(windows)} process pair(s)"
        machine_busy(result, windows, policy, why, NEXT_ONE_AT_A_TIME)
        effect = "inconclusive"
    result.interference = interference_record(windows, policy, effect)


def _ab_beyond(result: ScenarioResult, windows: Sequence[Interference]) -> Beyond | None:
    """The first regressed gated metric whose ratio's lower end lies beyond 1 + tolerance times the slowdown the
    busy ``windows`` explain of the candidate's requests (the base can only have been slowed too)."""
    assert result.ab is not None
    requests = [(row.cpu_ms, row.wait_ms) for row in result.rows if row.side == "candidate"]
    factor, delay = stretch_and_wait(requests, [(w.load_avg[0], w.cpus) for w in windows])
    for m in result.ab.metrics:
        if not m.gated or m.verdict != "regressed":
            continue
        bound = explained(m.candidate_ms, delay, factor)
        if beyond(m.low, 1 + m.tolerance, bound):
            assert m.low is not None
            return Beyond(m.name, m.low, 1 + m.tolerance, bound)
    return None


def run_line(results: Iterable[ScenarioResult]) -> str | None:
    """The run's interference on one line (None when nothing was measured)."""
    recorded = [(r.scenario, r.interference) for r in results if r.interference is not None and r.interference.windows]
    if not recorded:
        return None
    peaks = [(scenario, record.peak) for scenario, record in recorded if record.peak is not None]
    scenario, peak = max(peaks, key=lambda p: p[1].cpu_share)
    load = max(w.load_avg[0] for _, record in recorded for w in record.windows)
    busy = [record for _, record in recorded if any(w.busy for w in record.windows)]
    threshold = recorded[0][1].threshold
    text = (
        f"other processes used up to {peak.cpu_share:.0%} of {peak.cpus} CPUs ({scenario}), "
        f"load average up to {load:.2f}; {len(busy)} of {len(recorded)} scenario(s) measured busy"
    )
    text += f" (over {threshold:.0%})" if threshold is not None else " (busy-share check off)"
    devices = max((w.device_share for _, record in recorded for w in record.windows), default=0.0)
    if devices > 0:
        text += f"; other processes held up to {devices:.0%} of an assigned device's memory"
    effects = [record.effect for record in busy]
    made = [f"{effects.count(e)} {label}" for e, label in (("inconclusive", "fail(s) made inconclusive"),
            ("remeasured", "fail(s) re-measured quiet")) if e in effects]  # fmt: skip
    waited = sum(record.waited_s for _, record in recorded)
    text += f"; {waited:.0f} s waited for quiet in all" if waited >= 1 else ""
    return text + (f": {', '.join(made)}" if made else "")
