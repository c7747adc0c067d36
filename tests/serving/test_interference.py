"""The interference accounting on real processes: CPU burners outside the run's tree and inside it, psutil as is."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from pytest_diffperf.serving.deviceusage import DeviceProcess, NpuSmiProbe
from pytest_diffperf.serving.interference import (
    BusyPolicy,
    DeviceGuard,
    DeviceHolder,
    Interference,
    Meter,
    RunServers,
    Watch,
    tree,
    wait_quiet,
)
from pytest_diffperf.serving.launchers import ServerSpec
from pytest_diffperf.serving.pool import ServerPool
from pytest_diffperf.serving.process import ServerError
from tests.support.burners import BURN, listening_burner, outside_burners, start_burning

DATA = Path(__file__).parent / "data"


def cpu_of(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def test_a_burner_outside_the_tree_is_counted_outside_and_not_as_ours(tmp_path):
    with outside_burners(1, tmp_path) as (burner,):
        before = cpu_of(burner)
        meter = Meter(os.getpid())
        time.sleep(1)  # a window of 1 s: ~100 clock ticks of the burner's CPU time
        window = meter.stop()
        burned = cpu_of(burner) - before
    assert burned > 0.05  # it ran, whatever else the machine does
    assert window.outside_cpu_s >= 0.9 * burned - 0.05  # the machine's busy time less ours holds it
    assert window.ours_cpu_s < burned or window.ours_cpu_s < 0.5  # not ours: this test process sleeps
    assert 0 < window.cpu_share <= 1 and window.cpus == psutil.cpu_count()
    assert 0.9 < window.wall_s < 10


def test_a_burning_child_of_the_run_is_ours_and_never_named_outside():
    child = subprocess.Popen([sys.executable, "-c", BURN.format(seconds=30)])
    try:
        time.sleep(0.3)
        before = cpu_of(child.pid)
        meter = Meter(os.getpid())
        time.sleep(1)
        window = meter.stop()
        burned = cpu_of(child.pid) - before
    finally:
        child.kill()
        child.wait()
    assert burned > 0.05
    assert window.ours_cpu_s >= 0.9 * burned - 0.05
    assert child.pid not in {p.pid for p in window.top}


def test_a_child_that_ended_within_the_window_stays_ours():
    """A server stopped mid-window: its time moves to its parent's reaped-children time, still in the tree."""
    meter = Meter(os.getpid())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", BURN.format(seconds=0.5)], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    window = meter.stop()
    burned = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert burned > 0.05
    assert window.ours_cpu_s >= 0.9 * burned - 0.05


def test_a_server_listening_outside_the_runs_tree_is_the_runs_but_not_a_starter_above_the_run():
    """The listener's tree is the run's; its starter too, unless that one is above the run (here: this process)."""
    with listening_burner() as (run, listener, port, proc):  # run: a run's root, and its server's pid
        servers = RunServers()
        servers.adopt(run, run, port)
        assert {pid for pid, _ in servers.roots} == {listener}  # not this process: the run's parent
        meter = Meter(run, servers=servers)
        start_burning(proc)
        time.sleep(1.5)
        window = meter.stop()
        found = psutil.Process(listener)
        t = found.cpu_times()
        burned = t.user + t.system + t.children_user + t.children_system + sum(cpu_of(c.pid) for c in found.children())
    assert burned > 0.05
    assert window.ours_cpu_s >= 0.9 * burned - 0.05
    assert window.ours_cpu_s < burned + 0.5  # this process (above the run) is not the run's


def test_the_tree_is_the_root_and_its_descendants():
    parent = {10: 1, 11: 10, 12: 11, 13: 1, 14: 13, 15: 12}
    assert tree(10, parent) == {10, 11, 12, 15}
    assert tree(99, parent) == {99}


def window(cpu_share: float, holders: tuple[DeviceHolder, ...] = ()) -> Interference:
    return Interference(2.0, 2, cpu_share * 4, 1.0, (4.4, 3.0, 2.0), holders=holders)


def test_busy_is_over_the_share_of_the_cpus_or_of_a_devices_memory():
    policy = BusyPolicy(share=0.25)
    assert policy.busy(window(0.3)) and not policy.busy(window(0.25))
    held = (DeviceHolder("0", DeviceProcess(7, "python", 30_000.0), 80_000.0),)
    assert window(0.0, held).device_share == 0.375 and policy.busy(window(0.0, held))
    assert not BusyPolicy(share=None).busy(window(1.0, held))
    text = window(0.61, held).text()
    assert text == (
        "other processes used 61% of 2 CPUs (2.4 CPU-s in 2.0 s), load average 4.40; "
        "device 0 is held by pid 7 (python, 30000 MiB)"
    )


def test_waiting_for_quiet_ends_at_once_on_a_quiet_reading_and_gives_up_after_the_wait(tmp_path):
    lines: list[str] = []
    calm = wait_quiet(BusyPolicy(share=1.0, wait_s=10), lambda: Meter(os.getpid()), lines.append, sample_s=0.2)
    assert calm.found and calm.waited_s < 5 and not lines
    with outside_burners(2, tmp_path):
        busy = wait_quiet(BusyPolicy(share=0.01, wait_s=1.0), lambda: Meter(os.getpid()), lines.append, sample_s=0.3)
    assert not busy.found and 0.6 < busy.waited_s < 5
    assert lines[0].startswith("diffperf: waiting up to 1 s for a quiet machine: other processes used ")
    assert lines[-1].startswith("diffperf: the machine stayed busy for ")
    assert lines[0].endswith("; --diffperf-quiet-wait=0 skips the wait")


@pytest.mark.server
def test_the_wait_for_quiet_is_the_runs_not_each_scenarios(tmp_path):
    """Issue 39: ``--diffperf-quiet-wait`` bounds the whole run; the announcement says so and how to skip it."""
    lines: list[str] = []
    watch = Watch(os.getpid(), BusyPolicy(share=0.01, wait_s=5.0))
    with outside_burners(2, tmp_path):
        first = watch.wait_quiet(1, lines.append)
        second = watch.wait_quiet(1, lines.append)
    assert not first.found and not second.found
    assert watch.budget.spent_s == pytest.approx(first.waited_s + second.waited_s)
    assert watch.quiet_left_s == 0 and 5 <= watch.budget.spent_s < 12
    assert lines[0].startswith("diffperf: waiting up to 5 s (of 5 s for the whole run) for a quiet machine: ")
    assert lines[0].endswith("; --diffperf-quiet-wait=0 skips the wait")


def fake_npu_smi(folder: Path, pid: int | None = None) -> str:
    """A stand-in ``npu-smi`` printing the recorded 910B3 output (its holder of NPU 2 made ``pid``)."""
    text = (DATA / "npu-smi-910b3.txt").read_text()
    if pid is not None:
        text = text.replace("1333928", f"{pid:<7}")
    (folder / "out.txt").write_text(text)
    program = folder / "npu-smi"
    program.write_text(f"#!/bin/sh\ncat {folder / 'out.txt'}\n")
    program.chmod(0o755)
    return str(program)


@pytest.mark.parametrize("mode", ["fail", "wait"])
def test_a_held_device_is_named_with_its_pid_and_memory_and_refused(tmp_path, mode):
    lines: list[str] = []
    guard = DeviceGuard(NpuSmiProbe(fake_npu_smi(tmp_path)), os.getpid(), BusyPolicy(wait_s=0.5, device_mode=mode),
                        lines.append, poll_s=0.2)  # fmt: skip
    guard.check(["0", "1"])  # free
    with pytest.raises(ServerError) as caught:
        guard.check(["2", "3"])
    expected = "device 2 is held by pid 1333928 (unknown, 37709 MiB)"
    suffix = " after 0 s" if mode == "wait" else ""
    assert str(caught.value) == f"not started: {expected}{suffix} (--diffperf-busy-device {mode})"
    assert lines == (
        [f"diffperf: {expected}; waiting up to 0 s (--diffperf-busy-device wait)"] if mode == "wait" else []
    )


def test_a_held_device_is_reported_and_a_process_of_the_run_holds_nothing(tmp_path):
    lines: list[str] = []
    guard = DeviceGuard(NpuSmiProbe(fake_npu_smi(tmp_path)), os.getpid(), BusyPolicy(), lines.append)
    guard.check(["2"])
    assert lines == ["diffperf: device 2 is held by pid 1333928 (unknown, 37709 MiB); starting anyway "
                     "(--diffperf-busy-device report)"]  # fmt: skip
    ours = tmp_path / "ours"
    ours.mkdir()
    mine = DeviceGuard(NpuSmiProbe(fake_npu_smi(ours, os.getpid())), os.getpid(), BusyPolicy(device_mode="fail"))
    mine.check(["2"])  # this run's own server: not interference


def test_a_pool_starts_no_server_on_a_refused_device_and_a_meter_records_the_holder(tmp_path):
    watch = Watch(os.getpid(), BusyPolicy(device_mode="fail"), NpuSmiProbe(fake_npu_smi(tmp_path)),
                  lambda n: {"ASCEND_RT_VISIBLE_DEVICES": ",".join(["2", "3"][:n])})  # fmt: skip
    assert watch.devices(1) == ("2",) and Watch(1, BusyPolicy()).devices(2) == ("0", "1")
    pool = ServerPool(tmp_path / "servers", 60, before_start=watch.before_start(lambda _line: None))
    with pytest.raises(ServerError, match="not started: device 2 is held by pid 1333928"):
        pool.get(ServerSpec("reference", "tiny/flux-t2i", "", (), 1))
    assert pool.launches == [] and pool.running() is None
    holders = watch.meter(1).stop().holders
    assert [(h.device, h.process.pid, h.share) for h in holders] == [("2", 1333928, 37709 / 65536)]


def test_a_holder_the_tool_left_unnamed_is_named_from_the_process_table(tmp_path):
    with outside_burners(1, tmp_path) as (burner,):
        guard = DeviceGuard(NpuSmiProbe(fake_npu_smi(tmp_path, burner)), os.getpid(), BusyPolicy())
        (holder,) = guard.holders(["2"])
    assert holder.process.pid == burner and holder.process.name.startswith("python")
