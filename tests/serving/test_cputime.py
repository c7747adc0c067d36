"""A server's CPU time and run-queue wait, read from real processes: its tree, and the process on its port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

from pytest_diffperf.serving.cputime import server_cpu
from tests.support.burners import BURN, listening_burner, outside_burners, start_burning

TICKS_MS = 20  # CPU times are counted in clock ticks of 10 ms: one at each end


def test_the_cpu_time_of_a_burning_child_is_the_server_s(tmp_path):
    with listening_burner() as (idle, child, port, proc):
        server_cpu(idle, port)  # the port looked up once per server, before the window
        started = time.monotonic()
        before = server_cpu(idle, port)  # the watchdog's stand-in idles; the listener's tree works
        start_burning(proc)
        time.sleep(1.5)
        after = server_cpu(idle, port)
        wall_ms = (time.monotonic() - started) * 1000
        burned = _cpu_ms(child)
    assert before is not None and after is not None
    cpu_ms, wait_ms = after.since(before)
    assert burned > 50  # the burner ran, however busy the machine is
    # its time counted: the listener's tree (not under the first pid) is the server's
    assert cpu_ms >= 0.8 * burned - TICKS_MS
    assert cpu_ms <= wall_ms * (os.cpu_count() or 1) + TICKS_MS
    assert wait_ms is not None and wait_ms >= 0


def test_a_busy_machine_shows_in_the_wait_not_in_the_cpu_time(tmp_path):
    """Beside as many burners as CPUs and a second of CPU work, the work waits for a CPU; the wait is counted."""
    work = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=3)])
    try:
        port = _free_port()
        with outside_burners(2, tmp_path):
            server_cpu(work.pid, port)  # the port looked up once per server, before the window
            started = time.monotonic()
            before = server_cpu(work.pid, port)
            time.sleep(1.5)
            after = server_cpu(work.pid, port)
            wall_ms = (time.monotonic() - started) * 1000
    finally:
        work.kill()
        work.wait()
    assert before is not None and after is not None and before.waits_ns is not None
    cpu_ms, wait_ms = after.since(before)
    assert wait_ms is not None and wait_ms > 100  # 2 burners and the work on 2 CPUs: a third of the time at least
    assert wait_ms <= wall_ms  # one thread: it never waits longer than the window
    assert cpu_ms <= wall_ms + TICKS_MS


def test_no_process_reads_none():
    assert server_cpu(None, 1) is None
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert server_cpu(dead.pid, _free_port()) is None


def _cpu_ms(pid: int) -> float:
    """A process's CPU time with its reaped children's, in ms."""
    t = psutil.Process(pid).cpu_times()
    return (t.user + t.system + t.children_user + t.children_system) * 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the run-queue wait is Linux's schedstat")
