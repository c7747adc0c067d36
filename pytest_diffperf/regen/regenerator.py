"""Regeneration of one run: the checks made at its start, and each measured scenario's decision and write.

Writes happen where the measurement is (the xdist worker, or the only process), one locked merge
per scenario, so a run stopped half-way keeps what it finished. In regen mode a scenario passes
once its entry is written or deliberately kept: it is not a performance gate then. A scenario that
cannot be measured (server error, missing case) still fails.

``diffperf accept`` (``regen.accept``) decides and writes through the same ``write``, from the entries a
results file's requests give.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cases import Case
from ..errors import DiffperfError
from ..judging.verdict import ScenarioFailure
from ..perf.baselines import BaselineSet
from ..perf.entry import entry_from_measurement
from ..perf.measurement import Measurement
from ..platforms import Platform
from ..results.model import ScenarioResult
from .busy import BUSY_KEY, QUIET, busy_note
from .guard import check_platforms
from .policy import Decision, RegenSettings
from .summary import decision_lines
from .writer import check_writable, regenerate, run_metadata, target_file


@dataclass(frozen=True)
class Regenerator:
    settings: RegenSettings
    baselines: BaselineSet
    hardware: Platform | None
    metadata: dict[str, str]
    announce: Callable[[str], None] = lambda _line: None  # each decision, before it is written (live)
    warnings: tuple[str, ...] = ()  # the --regen-force overrides of the platform check
    accept_busy: bool = False  # --accept-busy: write figures measured busy, named in the metadata
    busy: list[str] = field(default_factory=list)  # the scenarios written so though measured busy

    @classmethod
    def start(
        cls,
        settings: RegenSettings,
        baselines: BaselineSet,
        hardware: Platform | None,
        cases: Mapping[str, Case],
        scenario_ids: Sequence[str],
        cases_path: Path | None,
        *,
        device: str = "",
        measured: str | None = None,
        force: bool = False,
        description: str | None = None,
        announce: Callable[[str], None] = lambda _line: None,
        accept_busy: bool = False,
    ) -> Regenerator:
        """Check the run can regenerate (DiffperfError if not): cases to measure, files that can be written and
        hold the platform's figures the servers measure (``device``, of platform ``measured``; see ``guard``)."""
        if not cases:
            where = f"{cases_path} has none" if cases_path else "no case file is set"
            raise DiffperfError(
                f"regeneration measures cases and {where}: pass --diffperf-cases FILE (or set diffperf_cases)",
                source="--regen-baselines",
            )
        on = f"{device} ({measured or 'platform unknown'})" if device else ""
        targets = {target_file(baselines, hardware, sid) for sid in scenario_ids if sid in cases}
        warnings = check_platforms(targets, hardware, device or "an unknown device", measured, force)
        run = cls(
            settings,
            baselines,
            hardware,
            run_metadata(
                settings.policy,
                hardware,
                baselines.primary.parent,
                measured_on=on,
                description=description,
                device=device or None,
                runner=os.environ.get("RUNNER_NAME") or None,
            ),
            announce,
            tuple(warnings),
            accept_busy,
        )
        if not settings.dry_run:
            for path in targets:
                check_writable(path)
        return run

    def target(self, scenario_id: str) -> Path:
        return target_file(self.baselines, self.hardware, scenario_id)

    def regenerate(
        self, scenario_id: str, measurement: Measurement, test_time_s: float, busy: str | None = None
    ) -> tuple[ScenarioResult, dict[str, Any]]:
        """Decide and write one measured scenario (``test_time_s``: its estimated full test time): the test's
        result, and the record the summary prints. ``busy`` (measured while other processes took the machine,
        with the figures): refused (ScenarioFailure) unless ``accept_busy``, then named in the metadata."""
        if busy is not None and not self.accept_busy:
            raise ScenarioFailure(
                f"{scenario_id}: not regenerated, {busy}: figures of a busy machine are no baseline (they hide "
                f"slowdowns); {QUIET}"
            )
        if busy is not None:
            self.busy.append(f"{scenario_id} {busy}")
            self.metadata[BUSY_KEY] = busy_note(self.busy)
        measured = entry_from_measurement(measurement, full_test_time_s=test_time_s)
        path = self.target(scenario_id)
        try:
            record = self.write(scenario_id, measured)
        except OSError as exc:
            raise ScenarioFailure(f"{scenario_id}: cannot write {path}: {exc.strerror or exc}") from None
        except TimeoutError:
            raise ScenarioFailure(f"{scenario_id}: timed out waiting for the lock on {path}") from None
        except DiffperfError as exc:
            raise ScenarioFailure(f"{scenario_id}: {exc}") from None
        result = ScenarioResult(scenario=scenario_id, verdict="pass", message=f"{record['action']}: {record['reason']}")
        return result, record

    def write(self, scenario_id: str, measured: Mapping[str, Any], regression: str | None = None) -> dict[str, Any]:
        """Decide one scenario's new entry from its ``measured`` one (``regression``: see ``policy.decide``),
        announce it and (unless a dry run) write it under the file's lock: the record the summary prints."""
        path = self.target(scenario_id)

        def announce(decision: Decision) -> None:
            for line in decision_lines(scenario_id, str(path), decision, self.settings.dry_run):
                self.announce(line)

        decision = regenerate(path, scenario_id, measured, self.settings, self.metadata, announce, regression)
        return {
            "scenario": scenario_id,
            "file": str(path),
            "action": decision.action,
            "reason": decision.reason,
            "entry": decision.entry,
            "changes": decision.changes(),
            "written": decision.writes and not self.settings.dry_run,
        }
