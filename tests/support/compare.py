"""Helpers for `diffperf compare` tests: case files, the command in-process, leak checks."""

from __future__ import annotations

import json
from pathlib import Path

import psutil

from pytest_diffperf import cli
from tests.support.cli import Result, diffperf


def write_cases(path: Path, cases: list[dict], **top) -> Path:
    path.write_text(json.dumps({**top, "cases": cases}, indent=2))
    return path


def compare(*args: str, cwd: Path) -> Result:
    """``diffperf compare ARGS`` in this process, run from ``cwd``: its exit code and output."""
    return diffperf("compare", *args, cwd=cwd)


def compare_here(*args: str) -> int:
    """``diffperf compare ARGS`` in this process, its output left to ``capsys``: its exit code."""
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
