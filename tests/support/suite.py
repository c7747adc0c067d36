"""Helpers for pytester runs of the plugin: tolerances, a baseline no run can exceed, tiny cases, results."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterable

import psutil

from pytest_diffperf.protocol import forkserver_in

# A run that judges speed or placement, not outputs: no comparison with ground truth (nor open_clip's imports)
SKIP_OUTPUTS = {"DIFFPERF_SKIP_CONSISTENCY": "1"}
TOLERANCES = {
    "pr_test": {"e2e": 2.0, "denoise_stage": 2.0, "non_denoise_stage": 4.0, "denoise_step": 4.0, "denoise_agg": 4.0},
    "long_term": {"e2e": 2.0, "denoise_stage": 2.0, "non_denoise_stage": 6.0, "denoise_step": 6.0, "denoise_agg": 6.0},
}
GENEROUS = {  # a baseline no CPU run can exceed: for tests about anything but verdicts
    "stages_ms": {},
    "denoise_step_ms": {},
    "expected_e2e_ms": 600000.0,
    "expected_avg_denoise_ms": 60000.0,
    "expected_median_denoise_ms": 60000.0,
    "estimated_full_test_time_s": 30,
}


def tiny_case(case_id: str, serve_args: str = "", **changes) -> dict:
    case = {
        "id": case_id,
        "model": "tiny/flux-t2i",
        "task": "text-to-image",
        "prompt": "a red bicycle",
        "width": 64,
        "height": 64,
        "num_inference_steps": 4,
        "seed": 1,
        # --memory-snapshots always: the CPU reference server then reports host memory (SGLang does so only on a device)
        "frameworks": {
            "sglang": {"serve_args": f"--warmup-mode server --memory-snapshots always {serve_args}".strip()}
        },
        "timeout_s": 120,
    }
    case.update(changes)
    return case


def refservers() -> list[psutil.Process]:
    """Reference servers started by this test process that still run (there must be none after a run);
    the servers that tests start themselves (``tests.support.refserver``, shared ones too) left out, and the
    fork server's tree (a forked server's ``serve`` stand-in is found instead, and lives as long as it)."""
    from tests.support.refserver import FIXTURE_PIDS

    forks = forkserver_in(os.environ)  # the fork server and its children: each server's stand-in is the run's
    own = set(FIXTURE_PIDS) | ({forks[0]} if forks else set())
    for pid in own.copy():
        with contextlib.suppress(psutil.Error):
            own |= {child.pid for child in psutil.Process(pid).children(recursive=True)}
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.pid not in own and "pytest_diffperf.refserver" in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.NoSuchProcess:
            pass
    return found


def kill_trees(pids: Iterable[int]) -> None:
    """SIGKILL each process and everything below it, found before any is killed (a test's cleanup,
    whatever happened: a watchdog killed first would leave its server behind)."""
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            found += [*proc.children(recursive=True), proc]
    for proc in found:
        with contextlib.suppress(psutil.Error):
            proc.kill()


def interrupt_when_serving(
    proc: subprocess.Popen,
    servers_of: Callable[[list[psutil.Process]], list[psutil.Process]],
    sig: int,
    within_s: float,
) -> None:
    """Once ``servers_of`` (given the run's descendants) finds servers, send ``sig`` to the run 3 s later; assert
    it ends interrupted (exit code 2) and stops those servers. Whatever happens, nothing of the run is left."""
    servers: list[psutil.Process] = []
    deadline = time.monotonic() + within_s
    try:
        while not servers and time.monotonic() < deadline:
            time.sleep(0.2)
            servers = servers_of(psutil.Process(proc.pid).children(recursive=True))
        assert servers, f"no server to interrupt within {within_s:g} s"
        time.sleep(3)
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 2  # pytest's exit code for an interrupted run
        _, alive = psutil.wait_procs(servers, timeout=10)
        assert not alive
    finally:  # a failure here must not leave servers behind for the next tests' checks
        kill_trees([proc.pid, *(p.pid for p in servers)])
        proc.wait()


def results(pytester) -> dict:
    return json.loads((pytester.path / "results.json").read_text())
