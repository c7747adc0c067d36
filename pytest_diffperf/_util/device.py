"""The name of the accelerator (or CPU) this machine measures on, asked of the vendor's tool."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

TOOL_TIMEOUT_S = 10.0
# (tool, arguments): the first line of its output names the device.
QUERIES = (
    ("nvidia-smi", ("--query-gpu=name", "--format=csv,noheader")),
    ("rocm-smi", ("--showproductname", "--csv")),
    ("npu-smi", ("info", "-l")),
    ("mthreads-gmi", ("-q",)),
)


def accelerator_name() -> str | None:
    """The first accelerator a vendor tool on PATH reports (CUDA's first visible device when set), or None."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    for tool, args in QUERIES:
        if shutil.which(tool) is None:
            continue
        extra = ("-i", visible) if tool == "nvidia-smi" and visible.isdigit() else ()
        try:
            done = subprocess.run(
                [tool, *args, *extra], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        name = _name(tool, done.stdout) if done.returncode == 0 else None
        if name:
            return name
    return None


def driver_version() -> str | None:
    """The NVIDIA driver's version (``nvidia-smi``), None where there is none."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()] if done.returncode == 0 else []
    return f"NVIDIA {lines[0]}" if lines else None


def _name(tool: str, out: str) -> str | None:
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if tool == "rocm-smi":  # csv: device,Card series,...
        rows = [line.split(",") for line in lines[1:]]
        return rows[0][1].strip() if rows and len(rows[0]) > 1 else None
    if tool in ("npu-smi", "mthreads-gmi"):
        named = [line.split(":", 1)[1].strip() for line in lines if "name" in line.lower() and ":" in line]
        return named[0] if named else None
    return lines[0] if lines else None


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else what ``platform`` knows)."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name") and ":" in line:
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"
