"""The plugin's state for one pytest process, kept on ``config.stash``."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from .baselines import BaselineSet, load_baselines
from .cases import Case, load_cases
from .errors import DiffperfError
from .launchers import Launcher, ServerSpec, get_launcher
from .limits import Preset, get_preset
from .options import SESSION_KEY, Settings, read_settings
from .platforms import FRAGMENT_PLATFORMS, FRAGMENTS, canonical_platform
from .pool import ServerPool


@dataclass
class DiffperfSession:
    settings: Settings
    baselines: BaselineSet
    cases: dict[str, Case]
    launcher: Launcher
    preset: Preset
    pool: ServerPool
    workdir: Path

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
        workdir = Path(tempfile.mkdtemp(prefix="diffperf-"))
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        progress = (lambda msg: reporter.write_line(msg)) if reporter else (lambda _msg: None)
        return cls(
            settings=settings,
            baselines=baselines,
            cases=cases,
            launcher=get_launcher(settings.diffperf_server),
            preset=get_preset(settings.diffperf_preset),
            pool=ServerPool(workdir, settings.diffperf_startup_timeout, progress),
            workdir=workdir,
        )

    def scenario_ids(self) -> list[str]:
        """Baseline scenarios of this hardware in file order, then cases that have no baseline yet.

        NPU/MUSA fragment scenarios run on their own platform only, and only they run there.
        """
        hardware = canonical_platform(self.settings.diffperf_hardware) if self.settings.diffperf_hardware else None
        ids = [sid for sid in self.baselines.scenarios if self._fragment_of(sid) == _fragment(hardware)]
        return ids + [cid for cid in self.cases if cid not in self.baselines.scenarios]

    def _fragment_of(self, scenario_id: str) -> str | None:
        source = self.baselines.source[scenario_id].as_posix()
        return next((p for p, rel in zip(FRAGMENT_PLATFORMS, FRAGMENTS) if source.endswith("/" + rel)), None)

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
        }

    def close(self) -> None:
        self.pool.release()


def _fragment(hardware: str | None) -> str | None:
    return hardware if hardware in FRAGMENT_PLATFORMS else None


def get_session(config: pytest.Config) -> DiffperfSession | None:
    return config.stash.get(SESSION_KEY, None)
