"""Where and how a run was made: time, commit, versions, hardware, device and runner.

It goes into the results file (``provenance``), the history, the report header, JUnit's test-suite
properties, the step summary and the HTML report. ``measured_platform`` is the platform of the
device the servers ran on (``cpu`` for the CPU reference server, and for any server on a machine
without an accelerator): regeneration refuses to write
figures into another platform's baseline file.
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .. import __version__
from .._util.device import accelerator_name, cpu_name, driver_version
from .._util.git import head_commit

# The CPU-only launchers: their servers measure on the CPU whatever accelerators the machine has.
CPU_LAUNCHERS = frozenset({"reference"})
# The distribution whose version a launcher's server reports.
SERVER_DISTRIBUTIONS = {"sglang": "sglang", "reference": "pytest-diffperf"}
# What a run's figures depend on, besides the plugin and the server (whose versions have fields of their own).
PACKAGES = ("torch", "diffusers", "transformers", "triton", "flash-attn", "numpy", "pytest", "pytest-xdist")
# Device-name fragments (upper case) -> platform, most specific first.
DEVICE_PLATFORMS = (
    (("RTX 5090", "RTX PRO 6000", "5090"), "5090"),
    (("B200", "B300", "GB200", "GB300"), "b200"),
    (("H100", "H200", "H800", "H20", "GH200"), "h100"),
    (("ARC PRO B60", "B60"), "xpu_b60"),
    (("INSTINCT", "MI300", "MI325", "MI355", "MI250", "RADEON"), "rocm"),
    (("ASCEND", "910B", "910C"), "npu"),
    (("MTT", "MOORE THREADS"), "musa"),
)
FIELDS = (
    "timestamp",
    "commit",
    "plugin_version",
    "launcher",
    "server_version",
    "hardware",
    "device",
    "measured_platform",
    "runner",
    "runner_prefix",
    "host",
    "python",
    "packages",
    "driver",
    "ci_run",
    "interference",
)


class Provenance(BaseModel):
    """One run's provenance (every field a string or None, so that JUnit can carry it)."""

    model_config = ConfigDict(extra="allow")

    timestamp: str  # ISO 8601, UTC
    commit: str | None = None
    plugin_version: str = __version__
    launcher: str | None = None
    server_version: str | None = None
    hardware: str | None = None  # the platform judged (--diffperf-hardware)
    device: str | None = None  # the accelerator's (or the CPU's) name
    measured_platform: str | None = None  # the platform of that device, when known
    runner: str | None = None  # $RUNNER_NAME
    runner_prefix: str | None = None  # the runner_overrides prefix applied
    host: str | None = None
    python: str | None = None
    packages: str | None = None  # the serving and testing stack's versions (PACKAGES), as installed here
    driver: str | None = None  # the accelerator's driver
    ci_run: str | None = (
        None  # the CI run's page (GitHub Actions: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID)
    )
    interference: str | None = None  # what other processes took while the run measured (set at its end)

    def line(self) -> str:
        """One header line."""
        commit = f"commit {self.commit[:12]}" if self.commit else "no commit"
        unknown = "(not installed here)" if self.launcher in SERVER_DISTRIBUTIONS else "(version unknown)"
        server = f"{self.launcher} {self.server_version or unknown}" if self.launcher else ""
        device = f"{self.device} ({self.measured_platform or 'platform unknown'})" if self.device else ""
        runner = f"runner {self.runner}" + (f" (overrides {self.runner_prefix!r})" if self.runner_prefix else "")
        parts = [f"pytest-diffperf {self.plugin_version}", commit, server, device, runner if self.runner else ""]
        return ", ".join(p for p in parts if p)

    def pairs(self) -> list[tuple[str, str]]:
        """(field, value) for every field that is set, in a fixed order."""
        data = self.model_dump()
        return [(name, str(data[name])) for name in FIELDS if data.get(name) is not None]


def device_platform(name: str | None) -> str | None:
    """The platform of a device name (``NVIDIA H100 80GB HBM3`` -> ``h100``), None when unknown."""
    upper = (name or "").upper()
    return next((p for fragments, p in DEVICE_PLATFORMS if any(f in upper for f in fragments)), None)


def server_version(launcher: str | None) -> str | None:
    """The installed version of the launcher's server (SGLang's, or this plugin's for the reference server)."""
    if launcher is None:
        return None
    try:
        return metadata.version(SERVER_DISTRIBUTIONS.get(launcher, launcher))
    except metadata.PackageNotFoundError:
        return __version__ if launcher in CPU_LAUNCHERS else None


def measured_on(launcher: str | None) -> tuple[str, str | None]:
    """(device name, its platform) the launcher's servers measure on: the CPU for the reference server, else the
    machine's first accelerator; on a machine without one, every server measures on the CPU (SGLang picks its
    ``CpuPlatform`` then), so the platform is ``cpu`` whatever the launcher."""
    if launcher not in CPU_LAUNCHERS:
        accelerator = accelerator_name()
        if accelerator is not None:
            return accelerator, device_platform(accelerator)
    return cpu_name(), "cpu"


def collect(
    launcher: str | None,
    hardware: str | None,
    runner_prefix: str | None = None,
    *,
    repo: os.PathLike[str] | str | None = None,
    now: datetime.datetime | None = None,
) -> Provenance:
    """This run's provenance (a vendor tool is asked for the device; git for the commit, else $GITHUB_SHA)."""
    device, measured = measured_on(launcher)
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).isoformat(timespec="seconds")
    commit = head_commit(Path(repo) if repo is not None else None) or os.environ.get("GITHUB_SHA") or None
    return Provenance(
        timestamp=stamp,
        commit=commit,
        launcher=launcher,
        server_version=server_version(launcher),
        hardware=hardware,
        device=device,
        measured_platform=measured,
        runner=os.environ.get("RUNNER_NAME") or None,
        runner_prefix=runner_prefix,
        host=platform.node() or None,
        python=f"{platform.python_version()} ({sys.implementation.name})",
        packages=installed_packages(),
        driver=driver_version(),
        ci_run=ci_run(os.environ),
    )


def installed_packages() -> str | None:
    """``torch 2.14.1+cu130, diffusers 0.37.0, ...``: the versions of PACKAGES installed here."""
    found = []
    for name in PACKAGES:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) or None


def ci_run(env: Mapping[str, str]) -> str | None:
    """The GitHub Actions run's page, when the run is one."""
    server, repo, run = (env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None


def machine_note(metadata: object, baseline: str, provenance: Provenance, hardware: str | None) -> str | None:
    """One line when the baseline file's figures were measured on another device or runner than this run's
    (``metadata.measured_device`` / ``measured_runner``, which regeneration and ``diffperf accept`` record), or,
    on cpu, where figures belong to one machine, when the file does not say; None otherwise."""
    meta = metadata if isinstance(metadata, dict) else {}
    device, runner = meta.get("measured_device"), meta.get("measured_runner")
    here = f"{provenance.device}" + (f", runner {provenance.runner}" if provenance.runner else "")
    if device is None:
        if (hardware or provenance.measured_platform) != "cpu":
            return None
        there = "a machine it does not name"
    elif device != provenance.device or (runner and provenance.runner and runner != provenance.runner):
        there = f"{device}" + (f", runner {runner}" if runner else "")
    else:
        return None
    return (
        f"{baseline} was measured on {there}, this run measures on {here}: timings of another machine; for "
        f"decisive verdicts record this one once (pytest --regen-baselines --diffperf-baselines=FILE, or diffperf "
        f"accept of a run's --diffperf-json), then judge against it"
    )
