"""The plugin's state for one pytest process, kept on ``config.stash``: settings, files, servers, devices."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..cases import Case, load_cases
from ..consistency.config import ConsistencyConfig
from ..consistency.thresholds import ThresholdSet
from ..errors import DiffperfError
from ..perf.baselines import BaselineSet, load_baselines, select_scenarios
from ..perf.limits import Preset, get_preset
from ..perf.lint import lint_baselines
from ..platforms import device_env_var
from ..serving.launchers import Launcher, ServerSpec, get_launcher, group_key
from ..serving.pool import ServerPool
from ..sharding.devices import DeviceShare, device_share, visible_devices
from ..sharding.plan import Shard, assign, parse_shard, server_groups
from .consistency import consistency_config, thresholds
from .logdir import log_dir
from .options import Settings, ground_truth_requested, read_settings
from .progress import register as live_progress


@dataclass
class DiffperfSession:
    settings: Settings
    baselines: BaselineSet
    cases: dict[str, Case]
    launcher: Launcher
    preset: Preset
    pool: ServerPool
    workdir: Path
    devices: DeviceShare  # this process's devices and ports
    shard: Shard | None = None  # run only this shard's scenarios
    consistency: ConsistencyConfig | None = None  # None: outputs are not compared
    thresholds: ThresholdSet | None = None

    @classmethod
    def from_config(cls, config: pytest.Config) -> DiffperfSession:
        """Read and check every setting and file (DiffperfError on the first problem), then make the work folder."""
        settings = read_settings(config)
        if settings.diffperf_baselines is None:
            raise DiffperfError(
                "needs a baseline file: pass --diffperf-baselines PATH or set diffperf_baselines in the ini file",
                source="--diffperf",
            )
        baselines = load_baselines(settings.diffperf_baselines, settings.diffperf_hardware)
        if settings.profile:
            baselines.profile(settings.profile)  # an unknown profile fails now, not once per test
        cases = load_cases(settings.diffperf_cases) if settings.diffperf_cases else {}
        shard = parse_shard(settings.diffperf_shard, settings.diffperf_shard_id, settings.diffperf_num_shards)
        devices = share_of(config, settings)
        launcher = get_launcher(settings.diffperf_server)
        if not launcher.writes_perf_log:
            message = f"launcher {launcher.name!r} writes no perf log, which the checks need"
            raise DiffperfError(message, source="--diffperf-server")
        consistency = None
        if any(c.run_consistency_check for c in cases.values()):
            consistency = consistency_config(settings, ground_truth_requested(config))
        limits = thresholds(settings) if consistency else None
        workdir = log_dir(config, settings)  # made by the first server start: none in a collect-only run
        progress = live_progress(config)  # shown live, also from xdist workers
        session = cls(
            settings=settings,
            baselines=baselines,
            cases=cases,
            launcher=launcher,
            preset=get_preset(settings.diffperf_preset),
            pool=ServerPool(workdir, settings.diffperf_startup_timeout, progress, devices.env, devices.ports),
            workdir=workdir,
            devices=devices,
            consistency=consistency,
            thresholds=limits,
        )
        session.shard = session.shard_of(*shard) if shard else None
        session.pool.progress_every = settings.diffperf_progress_every
        return session

    def scenario_ids(self) -> list[str]:
        return select_scenarios(self.baselines, self.cases, self.settings.diffperf_hardware)

    def spec(self, scenario_id: str) -> ServerSpec | None:
        case = self.cases.get(scenario_id)
        return ServerSpec.for_case(case, self.launcher.name) if case else None

    def shard_of(self, k: int, n: int) -> Shard:
        """Shard K of N of the session's scenarios (the plan ``diffperf plan`` prints for the same files)."""
        groups = server_groups(self.scenario_ids(), self.baselines.scenarios, group_key(self.cases, self.launcher.name))
        return assign(groups, n)[k - 1]

    def header(self) -> dict[str, object]:
        return {
            "profile": self.settings.profile,
            "preset": self.settings.diffperf_preset,
            "hardware": self.settings.diffperf_hardware,
            "baselines": [str(p) for p in self.baselines.files],
            "cases": str(self.settings.diffperf_cases) if self.settings.diffperf_cases else None,
            "launcher": self.launcher.name,
            "shard": f"{self.shard.number}/{self.shard.of}" if self.shard else None,
            "consistency": self.consistency.describe() if self.consistency else "off (no ground-truth folder)",
        }

    def header_lines(self) -> list[str]:
        """The report header: settings, the baseline files' lint warnings, where the logs go, the shard."""
        warnings = sum(f.severity == "warning" for f in lint_baselines(self.baselines))
        lines = [f"diffperf: {k}={v}" for k, v in self.header().items() if v is not None]
        if warnings:
            lines.append(f"diffperf: lint: {warnings} warning(s) in the baseline files (see: {self.lint_command()})")
        if self.shard is not None:
            lines.append(
                f"diffperf: shard {self.shard.number}/{self.shard.of}: {len(self.shard.scenarios)} scenario(s), "
                f"{len(self.shard.groups)} server start(s), estimated {self.shard.estimated_s:.0f} s"
            )
        return lines

    def lint_command(self) -> str:
        """The ``diffperf lint`` command that lists the findings the header counts."""
        hardware = self.settings.diffperf_hardware
        return shlex.join(
            ["diffperf", "lint", str(self.settings.diffperf_baselines), *(["--hardware", hardware] if hardware else [])]
        )

    def close(self) -> None:
        self.pool.release()


def share_of(config: pytest.Config, settings: Settings) -> DeviceShare:
    """This process's devices and ports: an xdist worker's slice, else all of them."""
    var = device_env_var(settings.diffperf_hardware)
    devices = visible_devices(settings.diffperf_devices, var)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return device_share(devices, var, getattr(config.option, "numprocesses", None) or 0, None)
    return device_share(devices, var, workerinput["workercount"], workerinput["workerid"])
