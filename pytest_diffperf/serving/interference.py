"""Interference: the CPU time and the device memory that processes outside the run take while it measures.

*Ours* is the run's processes: its tree, whose root is the xdist controller, else this pytest, and every
descendant (xdist workers, the watchdogs, this run's servers and their children); and, for each server the run
started, the tree of the process listening on its port and of the process that started that one, unless it is
above the run (:class:`RunServers`): a server the run asked for is the run's, whoever forked it, and a fork
server collects its CPU time when it ends. Everything else is outside: other runs' servers, other jobs, the
kernel's own work. A :class:`Meter` takes two
snapshots. Outside CPU time is the machine's busy time over the window (``psutil.cpu_times``:
everything but idle, iowait and steal) less the run's processes' CPU time; a process's time is its own and
its reaped children's, so a server stopped within the window is still counted as ours. The
outside processes that took the most are named. On an accelerator, the other processes holding
the assigned devices are read through a :mod:`.deviceusage` probe, with their memory.

:class:`DeviceGuard` looks before a server starts on devices another process holds;
:func:`wait_quiet` waits (bounded) until the outside share is back under a threshold.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

import psutil

from .cputime import server_roots
from .deviceusage import DeviceProbe, DeviceProcess
from .process import ServerError, ServerProcess

DeviceMode = Literal["report", "wait", "fail"]  # --diffperf-busy-device
DEVICE_MODES: tuple[DeviceMode, ...] = get_args(DeviceMode)
QUIET_SAMPLE_S = 2.0  # the window over which the machine is seen quiet
TOP_PROCESSES = 3  # outside processes named per window
NAMED_SHARE = 0.05  # of one CPU over the window: smaller ones are not named

_Key = tuple[int, float]  # (pid, create time): a reused pid is another process


@dataclass(frozen=True)
class OutsideProcess:
    pid: int
    name: str
    cpu_s: float


@dataclass(frozen=True)
class DeviceHolder:
    """A process outside the run holding an assigned device."""

    device: str
    process: DeviceProcess
    memory_total_mib: float | None

    @property
    def share(self) -> float:
        """Its share of the device's memory (0 when either is not reported)."""
        used, total = self.process.memory_mib, self.memory_total_mib
        return used / total if used is not None and total else 0.0

    def text(self) -> str:
        return f"device {self.device} is held by {self.process.text()}"


@dataclass(frozen=True)
class Interference:
    """What outside processes took during one measurement window."""

    wall_s: float
    cpus: int
    outside_cpu_s: float
    ours_cpu_s: float
    load_avg: tuple[float, float, float]
    top: tuple[OutsideProcess, ...] = ()
    holders: tuple[DeviceHolder, ...] = ()

    @property
    def cpu_share(self) -> float:
        """Outside CPU time as a share of all the machine's CPUs over the window."""
        return self.outside_cpu_s / (self.wall_s * self.cpus) if self.wall_s > 0 and self.cpus else 0.0

    @property
    def device_share(self) -> float:
        """The largest share of an assigned device's memory that outside processes hold."""
        by_device: dict[str, float] = {}
        for h in self.holders:
            by_device[h.device] = by_device.get(h.device, 0.0) + h.share
        return max(by_device.values(), default=0.0)

    @property
    def share(self) -> float:
        return max(self.cpu_share, self.device_share)

    def text(self) -> str:
        """``other processes used 61 % of 2 CPUs (2.4 CPU-s in 2.0 s), load average 4.20; most: pid 7 stress 1.1 CPU-s``."""
        text = (
            f"other processes used {self.cpu_share:.0%} of {self.cpus} CPUs ({self.outside_cpu_s:.1f} CPU-s in "
            f"{self.wall_s:.1f} s), load average {self.load_avg[0]:.2f}"
        )
        if self.top:
            text += "; most: " + ", ".join(f"pid {p.pid} {p.name or '?'} {p.cpu_s:.1f} CPU-s" for p in self.top)
        return text + "".join(f"; {h.text()}" for h in self.holders)


@dataclass(frozen=True)
class _Snapshot:
    at: float
    busy_s: float
    cpu: dict[_Key, tuple[str, float]]  # every process: name, CPU seconds (own and reaped children's)
    parent: dict[int, int]
    key_of: dict[int, _Key]
    holders: tuple[DeviceHolder, ...]


def busy_seconds() -> float:
    """The machine's CPU seconds spent so far, all CPUs: user (guest time included), nice, system, irq, softirq."""
    t = psutil.cpu_times()
    return sum(getattr(t, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq"))


def _processes() -> tuple[dict[_Key, tuple[str, float]], dict[int, int], dict[int, _Key]]:
    cpu: dict[_Key, tuple[str, float]] = {}
    parent: dict[int, int] = {}
    key_of: dict[int, _Key] = {}
    for proc in psutil.process_iter(["name", "cpu_times", "create_time", "ppid"]):
        info = proc.info
        times = info.get("cpu_times")
        if times is None or info.get("create_time") is None:
            continue  # gone, or not readable
        key = (proc.pid, float(info["create_time"]))
        seconds = (
            times.user + times.system + getattr(times, "children_user", 0.0) + getattr(times, "children_system", 0.0)
        )
        cpu[key] = (str(info.get("name") or ""), seconds)
        parent[proc.pid] = int(info.get("ppid") or 0)
        key_of[proc.pid] = key
    return cpu, parent, key_of


def tree(root: int, parent: dict[int, int]) -> set[int]:
    """``root`` and its descendants, from a pid -> parent pid map."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def run_root(watch: Sequence[int] = ()) -> int:
    """The root of the run's tree: the xdist controller a worker watches, else this process."""
    return watch[0] if watch else os.getpid()


@dataclass
class RunServers:
    """Where the run's servers started in this process live besides the run's tree: the process listening on each
    one's port and the process that started that one (a fork server), unless it is above the run (init, a shell).
    Looked up once per server, when it is ready (:meth:`Watch.adopt`)."""

    roots: set[_Key] = field(default_factory=set)

    def adopt(self, run: int, pid: int | None, port: int) -> None:
        """Add the server ``pid`` (its watchdog) serving ``port`` of the run whose root is ``run``."""
        if pid is None:
            return
        above: set[int] = set()
        with contextlib.suppress(psutil.Error):
            above = {p.pid for p in psutil.Process(run).parents()}
        for listener in server_roots(pid, port)[1:]:
            with contextlib.suppress(psutil.Error):
                self.roots.add(_key(listener))
                starter = listener.parent()
                if starter is not None and starter.pid not in above:
                    self.roots.add(_key(starter))


def run_processes(root: int, servers: RunServers | None, parent: dict[int, int], key_of: dict[int, _Key]) -> set[int]:
    """The run's processes now: ``root``'s tree and its servers' (``servers``), from a pid -> parent pid map and each
    pid's key (a reused pid is not the run's)."""
    ours = tree(root, parent)
    for pid, created in servers.roots if servers is not None else ():
        if key_of.get(pid) == (pid, created):
            ours |= tree(pid, parent)
    return ours


def _key(proc: psutil.Process) -> _Key:
    return (proc.pid, proc.create_time())


@dataclass
class Meter:
    """Started at construction; :meth:`stop` gives what outside processes took since."""

    root: int
    probe: DeviceProbe | None = None
    devices: Sequence[str] = ()
    servers: RunServers | None = None  # None: the run's tree alone
    _start: _Snapshot | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._start = self._snapshot()

    def _snapshot(self) -> _Snapshot:
        busy = busy_seconds()
        cpu, parent, key_of = _processes()
        ours = run_processes(self.root, self.servers, parent, key_of)
        return _Snapshot(time.monotonic(), busy, cpu, parent, key_of, self._holders(ours))

    def _ours(self, snapshot: _Snapshot) -> set[_Key]:
        """The run's processes in ``snapshot`` by the servers known now (one that became ready within the window
        was the run's from its start, its starter's children too)."""
        pids = run_processes(self.root, self.servers, snapshot.parent, snapshot.key_of)
        return {snapshot.key_of[p] for p in pids if p in snapshot.key_of}

    def _holders(self, ours: set[int]) -> tuple[DeviceHolder, ...]:
        if self.probe is None or not self.devices:
            return ()
        return tuple(
            DeviceHolder(state.device, named(proc), state.memory_total_mib)
            for state in self.probe.states(self.devices)
            for proc in state.processes
            if proc.pid not in ours
        )

    def stop(self) -> Interference:
        start = self._start
        assert start is not None
        end = self._snapshot()
        ours = self._ours(start) | self._ours(end)
        ours_s = sum(_seconds(end.cpu, k) - _seconds(start.cpu, k) for k in ours)
        wall = end.at - start.at
        cpus = psutil.cpu_count() or 1
        outside_s = min(max(0.0, end.busy_s - start.busy_s - max(0.0, ours_s)), wall * cpus)  # clock ticks: rounding
        deltas = [
            OutsideProcess(key[0], name, seconds - start.cpu.get(key, (name, 0.0))[1])
            for key, (name, seconds) in end.cpu.items()
            if key not in ours
        ]
        top = sorted((p for p in deltas if p.cpu_s >= NAMED_SHARE * wall), key=lambda p: -p.cpu_s)[:TOP_PROCESSES]
        load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
        return Interference(
            wall_s=wall,
            cpus=cpus,
            outside_cpu_s=outside_s,
            ours_cpu_s=max(0.0, ours_s),
            load_avg=(load[0], load[1], load[2]),
            top=tuple(OutsideProcess(p.pid, p.name, round(p.cpu_s, 2)) for p in top),
            holders=_largest(start.holders + end.holders),
        )


def named(proc: DeviceProcess) -> DeviceProcess:
    """``proc`` with its name from this machine's process table when the tool gave none (npu-smi often does not)."""
    if proc.name:
        return proc
    try:
        return replace(proc, name=psutil.Process(proc.pid).name())
    except psutil.Error:
        return proc


def _seconds(cpu: dict[_Key, tuple[str, float]], key: _Key) -> float:
    """A process's CPU seconds in a snapshot (0: not there yet, or ended and counted by the one that reaped it)."""
    return cpu[key][1] if key in cpu else 0.0


def _largest(holders: Iterable[DeviceHolder]) -> tuple[DeviceHolder, ...]:
    """One entry per (device, pid): the larger memory of the two snapshots."""
    kept: dict[tuple[str, int], DeviceHolder] = {}
    for h in holders:
        key = (h.device, h.process.pid)
        if key not in kept or (h.process.memory_mib or 0) > (kept[key].process.memory_mib or 0):
            kept[key] = h
    return tuple(kept.values())


@dataclass(frozen=True)
class BusyPolicy:
    """When a measurement counts as busy (``share``: None never), and how long to wait for quiet or a free device."""

    share: float | None = 0.25
    wait_s: float = 120.0
    device_mode: DeviceMode = "report"

    def busy(self, window: Interference) -> bool:
        return self.share is not None and window.share > self.share


@dataclass(frozen=True)
class Quiet:
    """How a wait for a quiet machine ended: ``found``, after ``waited_s``; the last window seen."""

    found: bool
    waited_s: float
    last: Interference


def wait_quiet(
    policy: BusyPolicy,
    meter: Callable[[], Meter],
    progress: Callable[[str], None] = lambda _line: None,
    sample_s: float = QUIET_SAMPLE_S,
    total_s: float | None = None,
) -> Quiet:
    """Measure windows of ``sample_s`` until one is not busy, for ``policy.wait_s`` at most (``total_s``: the run's
    whole budget, for the announcement)."""
    started = time.monotonic()
    said = False
    while True:
        m = meter()
        time.sleep(sample_s)
        window = m.stop()
        waited = time.monotonic() - started
        if not policy.busy(window):
            if said:
                progress(f"diffperf: the machine is quiet after {waited:.0f} s ({window.text()})")
            return Quiet(True, waited, window)
        if waited + sample_s > policy.wait_s:
            progress(f"diffperf: the machine stayed busy for {waited:.0f} s ({window.text()})")
            return Quiet(False, waited, window)
        if not said:
            budget = f" (of {total_s:.0f} s for the whole run)" if total_s is not None else ""
            progress(
                f"diffperf: waiting up to {policy.wait_s:.0f} s{budget} for a quiet machine: {window.text()}; "
                "--diffperf-quiet-wait=0 skips the wait"
            )
            said = True


@dataclass
class QuietBudget:
    """The run's waiting for a quiet machine: ``--diffperf-quiet-wait`` seconds in all, not per scenario."""

    spent_s: float = 0.0


@dataclass
class DeviceGuard:
    """Before a server starts: the outside processes that hold its devices, reported, waited for, or refused."""

    probe: DeviceProbe
    root: int
    policy: BusyPolicy
    progress: Callable[[str], None] = lambda _line: None
    poll_s: float = QUIET_SAMPLE_S
    servers: RunServers | None = None  # None: the run's tree alone

    def holders(self, devices: Sequence[str]) -> list[DeviceHolder]:
        _, parent, key_of = _processes()
        ours = run_processes(self.root, self.servers, parent, key_of)
        return [
            DeviceHolder(s.device, named(p), s.memory_total_mib)
            for s in self.probe.states(devices)
            for p in s.processes
            if p.pid not in ours
        ]

    def check(self, devices: Sequence[str]) -> None:
        """Say who holds ``devices``; by ``policy.device_mode`` go on, wait for them (then fail), or fail."""
        held = self.holders(devices)
        if not held:
            return
        mode = self.policy.device_mode
        line = "; ".join(h.text() for h in held)
        if mode == "report":
            self.progress(f"diffperf: {line}; starting anyway (--diffperf-busy-device report)")
            return
        if mode == "wait":
            self.progress(f"diffperf: {line}; waiting up to {self.policy.wait_s:.0f} s (--diffperf-busy-device wait)")
            deadline = time.monotonic() + self.policy.wait_s
            while held and time.monotonic() < deadline:
                time.sleep(self.poll_s)
                held = self.holders(devices)
            if not held:
                self.progress(f"diffperf: device(s) {','.join(devices)} free")
                return
            line = "; ".join(h.text() for h in held) + f" after {self.policy.wait_s:.0f} s"
        raise ServerError(f"not started: {line} (--diffperf-busy-device {mode})")


@dataclass(frozen=True)
class Watch:
    """The run's interference setup: its tree's root, the busy policy, the device probe (None: no accelerator
    tool, or a CPU-only launcher), the devices a server of ``num_gpus`` gets (``ServerPool.device_env``) and where
    the servers this process started live (``servers``: shared by its copies, as ``budget`` is)."""

    root: int
    policy: BusyPolicy
    probe: DeviceProbe | None = None
    device_env: Callable[[int], dict[str, str]] = lambda _num_gpus: {}
    budget: QuietBudget = field(default_factory=QuietBudget)  # what the run has waited for quiet so far
    servers: RunServers = field(default_factory=RunServers)

    def devices(self, num_gpus: int) -> tuple[str, ...]:
        """The devices a server gets: its visible-devices variable, else (devices not managed) the first ``num_gpus``."""
        listed = next(iter(self.device_env(num_gpus).values()), "")
        return tuple(listed.split(",")) if listed else tuple(str(i) for i in range(num_gpus))

    def meter(self, num_gpus: int = 1) -> Meter:
        return Meter(self.root, self.probe, self.devices(num_gpus) if self.probe is not None else (), self.servers)

    def adopt(self, server: ServerProcess) -> None:
        """What a pool runs once a server is ready: its processes are the run's, whoever started them."""
        self.servers.adopt(self.root, server.pid, server.port)

    def before_start(self, progress: Callable[[str], None]) -> Callable[[int], None]:
        """What a pool runs before it starts a server of ``num_gpus`` (:meth:`DeviceGuard.check`)."""
        if self.probe is None:
            return lambda _num_gpus: None
        guard = DeviceGuard(self.probe, self.root, self.policy, progress, servers=self.servers)
        return lambda num_gpus: guard.check(self.devices(num_gpus))

    @property
    def quiet_left_s(self) -> float:
        """What is left of the run's wait for quiet (``--diffperf-quiet-wait`` in all)."""
        return max(self.policy.wait_s - self.budget.spent_s, 0.0)

    def wait_quiet(self, num_gpus: int, progress: Callable[[str], None]) -> Quiet:
        """:func:`wait_quiet` for a server of ``num_gpus``, at most what is left of the run's budget."""
        policy = replace(self.policy, wait_s=self.quiet_left_s)
        found = wait_quiet(policy, lambda: self.meter(num_gpus), progress, total_s=self.policy.wait_s)
        self.budget.spent_s += found.waited_s
        return found
