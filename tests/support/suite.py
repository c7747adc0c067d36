"""Helpers for pytester runs of the plugin: tolerances, a baseline no run can exceed, tiny cases, results."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable

import psutil

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
    """Reference servers started by this test process that still run (there must be none after a run)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "pytest_diffperf.refserver" in " ".join(proc.cmdline()):
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


def results(pytester) -> dict:
    return json.loads((pytester.path / "results.json").read_text())
