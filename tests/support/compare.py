"""Helpers for `diffperf compare` tests: case files, the command in a subprocess or in-process, leak checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from pytest_diffperf import cli
from tests.support.paths import REPO


def write_cases(path: Path, cases: list[dict], **top) -> Path:
    path.write_text(json.dumps({**top, "cases": cases}, indent=2))
    return path


def compare(*args: str, cwd: Path, pythonpath: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``diffperf compare ARGS`` in a subprocess that imports this worktree's code."""
    path = os.pathsep.join([*pythonpath, str(REPO), os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest_diffperf.cli", "compare", *args],
        cwd=cwd,
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1"},
        timeout=600,
    )


def compare_here(*args: str) -> int:
    """``diffperf compare ARGS`` in this process (for launchers registered by the test)."""
    return cli.main(["compare", *args])


def servers_under(log_dir: Path) -> list[psutil.Process]:
    """Live processes whose perf-log directory lies under ``log_dir`` (none may survive a run)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("SGLANG_PERF_LOG_DIR", "").startswith(str(log_dir)):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found
