"""Regeneration of one run: the checks made at its start, and each measured scenario's decision and write.

Writes happen where the measurement is (the xdist worker, or the only process), one locked merge
per scenario, so a run stopped half-way keeps what it finished. In regen mode a scenario passes
once its entry is written or deliberately kept: it is not a performance gate then. A scenario that
cannot be measured (server error, missing case) still fails.

``estimated_full_test_time_s`` is the scenario's measured wall time (warmup and measured
requests) plus an equal share of its server's start-up time (spawn until ready): the start is
split across every scenario of the suite that uses the same server, selected or not, so the
estimate does not depend on ``-k``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cases import Case
from ..errors import DiffperfError
from ..perf.baselines import BaselineSet
from ..perf.entry import entry_from_measurement
from ..perf.measurement import Measurement
from ..results.model import ScenarioResult
from ..results.verdict import ScenarioFailure
from .guard import check_platforms
from .policy import Decision, RegenSettings
from .summary import decision_lines
from .writer import check_writable, regenerate, run_metadata, target_file


@dataclass(frozen=True)
class Regenerator:
    settings: RegenSettings
    baselines: BaselineSet
    hardware: str | None
    metadata: dict[str, str]
    group_sizes: Mapping[str, int]  # server group -> how many measured scenarios of the suite run on it
    announce: Callable[[str], None] = lambda _line: None  # each decision, before it is written (live)
    warnings: tuple[str, ...] = ()  # the --regen-force overrides of the platform check

    @classmethod
    def start(
        cls,
        settings: RegenSettings,
        baselines: BaselineSet,
        hardware: str | None,
        cases: Mapping[str, Case],
        scenario_ids: Sequence[str],
        group_of: Callable[[str], str],
        cases_path: Path | None,
        *,
        device: str = "",
        measured: str | None = None,
        force: bool = False,
        description: str | None = None,
        announce: Callable[[str], None] = lambda _line: None,
    ) -> Regenerator:
        """Check the run can regenerate (DiffperfError if not): cases to measure, files that can be written and
        hold the platform's figures the servers measure (``device``, of platform ``measured``; see ``guard``)."""
        if not cases:
            where = f"{cases_path} has none" if cases_path else "no case file is set"
            raise DiffperfError(
                f"regeneration measures cases and {where}: pass --diffperf-cases FILE (or set diffperf_cases)",
                source="--regen-baselines",
            )
        ran = [sid for sid in scenario_ids if sid in cases]  # run_perf_check false too: SGLang regenerates those
        on = f"{device} ({measured or 'platform unknown'})" if device else ""
        targets = {target_file(baselines, hardware, sid) for sid in scenario_ids if sid in cases}
        warnings = check_platforms(targets, hardware, device or "an unknown device", measured, force)
        run = cls(
            settings,
            baselines,
            hardware,
            run_metadata(settings.policy, hardware, baselines.primary.parent, measured_on=on, description=description),
            Counter(group_of(sid) for sid in ran),
            announce,
            tuple(warnings),
        )
        if not settings.dry_run:
            for path in targets:
                check_writable(path)
        return run

    def target(self, scenario_id: str) -> Path:
        return target_file(self.baselines, self.hardware, scenario_id)

    def regenerate(
        self, scenario_id: str, group: str, ready_s: float | None, measurement: Measurement, measure_s: float
    ) -> tuple[ScenarioResult, dict[str, Any]]:
        """Decide and write one scenario: the test's result, and the record the summary prints."""
        start_share = (ready_s or 0.0) / max(1, self.group_sizes.get(group, 1))
        measured = entry_from_measurement(measurement, full_test_time_s=measure_s + start_share)
        path = self.target(scenario_id)

        def announce(decision: Decision) -> None:
            for line in decision_lines(scenario_id, str(path), decision, self.settings.dry_run):
                self.announce(line)

        try:
            decision = regenerate(path, scenario_id, measured, self.settings, self.metadata, announce)
        except OSError as exc:
            raise ScenarioFailure(f"{scenario_id}: cannot write {path}: {exc.strerror or exc}") from None
        except TimeoutError:
            raise ScenarioFailure(f"{scenario_id}: timed out waiting for the lock on {path}") from None
        except DiffperfError as exc:
            raise ScenarioFailure(f"{scenario_id}: {exc}") from None
        record = {
            "scenario": scenario_id,
            "file": str(path),
            "action": decision.action,
            "reason": decision.reason,
            "entry": decision.entry,
            "changes": decision.changes(),
            "written": decision.writes and not self.settings.dry_run,
        }
        result = ScenarioResult(scenario=scenario_id, verdict="pass", message=f"{decision.action}: {decision.reason}")
        return result, record
