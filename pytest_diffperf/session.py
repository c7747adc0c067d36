"""The plugin's state for one pytest process, kept on ``config.stash``."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .perf.baselines import BaselineSet, load_baselines, select_scenarios
from .cases import Case, load_cases
from .sharding.devices import DeviceShare
from .distribute import shard_of, share_of
from .errors import DiffperfError
from .serving.launchers import Launcher, ServerSpec, get_launcher
from .perf.limits import Preset, get_preset
from .options import SESSION_KEY, Settings, ground_truth_requested, read_settings
from .serving.pool import ServerPool
from .sharding.plan import Shard, parse_shard

if TYPE_CHECKING:
    from .consistency import ConsistencyConfig
    from .consistency.thresholds import ThresholdSet


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
        workdir = Path(tempfile.mkdtemp(prefix="diffperf-"))
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        progress = (lambda msg: reporter.write_line(msg)) if reporter else (lambda _msg: None)
        ds = cls(
            settings=settings,
            baselines=baselines,
            cases=cases,
            launcher=launcher,
            preset=get_preset(settings.diffperf_preset),
            pool=ServerPool(workdir, settings.diffperf_startup_timeout, progress, devices.env, devices.ports),
            workdir=workdir,
            devices=devices,
        )
        ds.shard = shard_of(ds, *shard) if shard else None
        if any(c.run_consistency_check for c in cases.values()):
            from .outputcheck import consistency_config, thresholds

            ds.consistency = consistency_config(settings, ground_truth_requested(config))
            ds.thresholds = thresholds(settings) if ds.consistency else None
        return ds

    def scenario_ids(self) -> list[str]:
        return select_scenarios(self.baselines, self.cases, self.settings.diffperf_hardware)

    def spec(self, scenario_id: str) -> ServerSpec | None:
        case = self.cases.get(scenario_id)
        return ServerSpec.for_case(case, self.launcher.name) if case else None

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
        from .perf.lint import lint_baselines

        warnings = sum(f.severity == "warning" for f in lint_baselines(self.baselines))
        lines = [f"diffperf: {k}={v}" for k, v in self.header().items() if v is not None]
        lines.append(f"diffperf: lint: {warnings} warning(s) in the baseline files (see: diffperf lint FILE)")
        lines.append(f"diffperf: logs in {self.workdir}")
        if self.shard is not None:
            from .distribute import shard_header

            lines.append(shard_header(self.shard))
        return lines

    def close(self) -> None:
        self.pool.release()


def get_session(config: pytest.Config) -> DiffperfSession | None:
    return config.stash.get(SESSION_KEY, None)
