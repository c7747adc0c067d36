"""The CPU time of a server's processes, and how long their threads waited for a CPU: the evidence that a
request did more work, and how much of its time the machine's other users took.

A server's processes are its tree (the watchdog, the server, their children) and, where the server was forked
by another process (the reference server's fork server), the tree of the process that listens on its port
(:func:`server_roots`, which the interference meter's rule shares).
CPU time is a process's own and its reaped children's (psutil), so a worker that ended within a request still
counts. The wait is each thread's run-queue delay (Linux's ``/proc/PID/task/TID/schedstat``, second field:
time runnable but not running); where the kernel does not expose it, it is None.
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import psutil


@dataclass(frozen=True)
class CpuReading:
    """The server's processes at one moment: CPU seconds so far, and each thread's run-queue wait so far (ns)."""

    cpu_s: float
    waits_ns: dict[tuple[int, int], int] | None  # (pid, tid) -> ns; None: not exposed

    def since(self, start: CpuReading) -> tuple[float, float | None]:
        """CPU ms and run-queue wait ms from ``start`` to this reading (a thread started since counts from 0)."""
        cpu_ms = max(0.0, self.cpu_s - start.cpu_s) * 1000
        if self.waits_ns is None or start.waits_ns is None:
            return cpu_ms, None
        before = start.waits_ns
        wait_ns = sum(max(0, ns - before.get(key, 0)) for key, ns in self.waits_ns.items())
        return cpu_ms, wait_ns / 1e6


@functools.lru_cache(maxsize=64)
def server_roots(pid: int, port: int) -> tuple[psutil.Process, ...]:
    """The server's root processes: ``pid`` and the one listening on ``port`` (once per server, looked up while it
    serves: a full scan)."""
    roots: list[psutil.Process] = []
    with contextlib.suppress(psutil.Error):
        roots.append(psutil.Process(pid))
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections("tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                roots.append(psutil.Process(conn.pid))
                break
    return tuple(roots)


def _seconds(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return float(t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0))


def _waits(pid: int) -> dict[tuple[int, int], int] | None:
    """Each thread's run-queue wait so far, in ns (None: not exposed)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    waits = {}
    for tid in tids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            waits[(pid, int(tid))] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[1])
    return waits


def server_cpu(pid: int | None, port: int) -> CpuReading | None:
    """The server's processes now (None: none to read, e.g. not started)."""
    if pid is None:
        return None
    seen: dict[int, psutil.Process] = {}
    for root in server_roots(pid, port):
        with contextlib.suppress(psutil.Error):
            for proc in (root, *root.children(recursive=True)):
                seen[proc.pid] = proc
    total, read = 0.0, False
    waits: dict[tuple[int, int], int] | None = {}
    for proc in seen.values():
        with contextlib.suppress(psutil.Error):
            total += _seconds(proc)
            read = True
            found = _waits(proc.pid)
            waits = None if found is None or waits is None else {**waits, **found}
    return CpuReading(total, waits) if read else None
