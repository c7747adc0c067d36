"""Regeneration inside a pytest run: started with the session, and its summary.

The summary is printed by the controller from test reports, so xdist workers' decisions arrive; a
dry run adds the unified diff of every file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from typing import Any

import pytest

from ..errors import DiffperfError
from ..regen.policy import RegenSettings
from ..regen.regenerator import Regenerator
from ..regen.summary import summary_lines
from ..regen.writer import diffs
from ..results.provenance import measured_on
from .session import DiffperfSession

REGEN_KEY: pytest.StashKey[Regenerator] = pytest.StashKey()
REGEN_PROPERTY = "diffperf_regen"  # a test's regeneration record (JSON), for the summary


def start_regen(config: pytest.Config, session: DiffperfSession) -> None:
    """Check the run can regenerate (DiffperfError if not), then stash it and register its summary."""
    s = session.settings
    try:
        settings = RegenSettings(s.regen_policy, s.regen_min_improvement, s.regen_dry_run)
        ids = session.scenario_ids()
        device, measured = measured_on(session.launcher.name)
        run = Regenerator.start(
            settings, session.baselines, s.diffperf_hardware, session.cases, ids,
            s.diffperf_cases, device=device, measured=measured, force=s.regen_force,
            description=s.regen_description, announce=session.pool.progress, accept_busy=s.accept_busy,
        )  # fmt: skip
    except DiffperfError:
        shutil.rmtree(session.workdir, ignore_errors=True)  # an empty folder; nothing of this run stays
        raise
    config.stash[REGEN_KEY] = run
    config.pluginmanager.register(RegenSummary(run.settings, run.metadata, run.warnings), "diffperf-regen")


def get_regen(config: pytest.Config) -> Regenerator | None:
    return config.stash.get(REGEN_KEY, None)


class RegenSummary:
    def __init__(self, settings: RegenSettings, metadata: dict[str, str], warnings: Sequence[str] = ()):
        self.settings = settings
        self.metadata = metadata
        self.warnings = list(warnings)
        self.records: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return [f"diffperf: {warning}" for warning in self.warnings]

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == REGEN_PROPERTY:
                self.records[report.nodeid] = json.loads(str(value))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        write = terminalreporter.write_line
        terminalreporter.section("diffperf baseline regeneration")
        for warning in self.warnings:
            write(f"warning: {warning}")
        for line in summary_lines(list(self.records.values()), self.settings):
            write(line)
        if self.settings.dry_run:
            for text in diffs(self.records.values(), self.metadata):
                terminalreporter.write(text)
