"""Regeneration inside a pytest run: checks at start, and each measured scenario's decision and write.

Writes happen where the measurement is (the xdist worker, or the only process), one locked merge
per scenario, so a run stopped half-way keeps what it finished. In regen mode a scenario's test
passes once its entry is written or deliberately kept: it is not a performance gate then. A
scenario that cannot be measured (server error, missing case) still fails.

``estimated_full_test_time_s`` is the scenario's measured wall time (warmup and measured
requests) plus an equal share of its server's start-up time (spawn until ready): the start is
split across every scenario of the suite that uses the same server, selected or not, so the
estimate does not depend on ``-k``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .errors import DiffperfError
from .serving.launchers import ServerSpec
from .perf.measurement import Measurement
from .regen import RegenSettings
from .regenfile import check_writable, regenerate, run_metadata, target_file
from .regenreport import REGEN_PROPERTY, RegenSummary
from .results.verdict import ScenarioFailure, ScenarioResult
from .session import DiffperfSession
from .perf.entry import measured_scenario

if TYPE_CHECKING:
    from .collect import ScenarioItem

REGEN_KEY: pytest.StashKey[RegenRun] = pytest.StashKey()


def start_regen(config: pytest.Config, ds: DiffperfSession) -> None:
    """Check the run can regenerate (DiffperfError if not), then stash it and register its summary."""
    try:
        run = RegenRun.start(ds)
    except DiffperfError:
        shutil.rmtree(ds.workdir, ignore_errors=True)  # an empty folder; nothing of this run stays
        raise
    config.stash[REGEN_KEY] = run
    config.pluginmanager.register(RegenSummary(run.settings, run.metadata), "diffperf-regen")


def get_regen(config: pytest.Config) -> RegenRun | None:
    return config.stash.get(REGEN_KEY, None)


@dataclass
class RegenRun:
    settings: RegenSettings
    ds: DiffperfSession
    metadata: dict[str, str]
    _group_sizes: dict[ServerSpec, int] = field(default_factory=dict)

    @classmethod
    def start(cls, ds: DiffperfSession) -> RegenRun:
        settings = RegenSettings.from_settings(ds.settings)
        if not ds.cases:
            where = f"{ds.settings.diffperf_cases} has none" if ds.settings.diffperf_cases else "no case file is set"
            raise DiffperfError(
                f"regeneration measures cases and {where}: pass --diffperf-cases FILE (or set diffperf_cases)",
                source="--regen-baselines",
            )
        run = cls(
            settings, ds, run_metadata(settings.policy, ds.settings.diffperf_hardware, ds.baselines.primary.parent)
        )
        if not settings.dry_run:
            for path in {run.target(sid) for sid in ds.scenario_ids() if sid in ds.cases}:
                check_writable(path)
        return run

    def target(self, scenario_id: str) -> Path:
        return target_file(self.ds.baselines, self.ds.settings.diffperf_hardware, scenario_id)

    def group_size(self, spec: ServerSpec) -> int:
        """How many scenarios of the suite run on the server of ``spec``."""
        if spec not in self._group_sizes:
            ids = [sid for sid in self.ds.scenario_ids() if sid in self.ds.cases and self.ds.cases[sid].run_perf_check]
            self._group_sizes[spec] = max(1, sum(self.ds.spec(sid) == spec for sid in ids))
        return self._group_sizes[spec]

    def regenerate(self, item: ScenarioItem, measurement: Measurement, measure_s: float) -> ScenarioResult:
        """Decide and write one scenario; record the decision for the summary; the test's result."""
        assert item.server is not None and item.spec is not None
        start_share = (item.server.ready_s or 0.0) / self.group_size(item.spec)
        measured = measured_scenario(measurement, full_test_time_s=measure_s + start_share)
        path = self.target(item.name)
        try:
            decision = regenerate(path, item.name, measured, self.settings, self.metadata)
        except OSError as exc:
            raise ScenarioFailure(f"{item.name}: cannot write {path}: {exc.strerror or exc}") from None
        except TimeoutError:
            raise ScenarioFailure(f"{item.name}: timed out waiting for the lock on {path}") from None
        except DiffperfError as exc:
            raise ScenarioFailure(f"{item.name}: {exc}") from None
        record = {
            "scenario": item.name,
            "file": str(path),
            "action": decision.action,
            "reason": decision.reason,
            "entry": decision.entry,
            "changes": decision.changes(),
            "written": decision.writes and not self.settings.dry_run,
        }
        item.user_properties.append((REGEN_PROPERTY, json.dumps(record)))
        return ScenarioResult(scenario=item.name, verdict="pass", message=f"{decision.action}: {decision.reason}")
