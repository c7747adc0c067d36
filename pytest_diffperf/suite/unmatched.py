"""Scenarios without a case, cases without a scenario, and cases not expressible yet: listed in the run.

After collection (``-k`` and shards applied) the terminal shows those of the selected tests; under
xdist, where the controller collects nothing, the terminal summary lists those of the tests that ran.
A run over a whole baseline file (every scenario of the platform collected: no ``-k``, no shard) ends
with what no case uses (``regen.unused``): scenarios, thresholds entries, ground-truth files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..perf.baselines import select_scenarios
from ..regen.unused import Unused, unused_entries
from .report import SCENARIO_PROPERTY
from .session import DiffperfSession
from .stash import SCENARIO_KEY


class UnmatchedReport:
    def __init__(self, session: DiffperfSession):
        self.session = session
        self.listed = False  # listed after this process's collection
        self.ran: list[str] = []
        self.collected: list[str] = []

    @pytest.hookimpl
    def pytest_report_collectionfinish(
        self, config: pytest.Config, start_path: Path, items: list[pytest.Item]
    ) -> list[str]:
        self.listed = True
        scenarios = [s for item in items if (s := item.stash.get(SCENARIO_KEY, None)) is not None]
        self.collected = scenarios
        return self.session.unmatched(scenarios).lines()

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        scenario = dict(report.user_properties).get(SCENARIO_PROPERTY)
        if report.when == "setup" and scenario is not None:
            self.ran.append(str(scenario))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        lines = [] if self.listed else self.session.unmatched(self.ran).lines()
        if lines:
            terminalreporter.section("diffperf: cases and scenarios that do not meet")
            for line in lines:
                terminalreporter.write_line(line)
        unused = self.unused()
        if unused:
            terminalreporter.section("diffperf: unused entries")
            for u in unused:
                terminalreporter.write_line(u.line())
            terminalreporter.write_line(f"diffperf: {self.session.lint_command(prune=True)} removes them")

    def unused(self) -> list[Unused]:
        """What no case uses, when this run covered the whole baseline file of its platform (else nothing)."""
        session = self.session
        whole = select_scenarios(session.baselines, {}, session.settings.diffperf_hardware)
        if not session.cases or not set(whole) <= set(self.collected or self.ran):
            return []
        consistency = session.consistency  # a data repository's GT (SGLang's lookup) is not a folder to prune
        gt_dir = consistency.gt_dir if consistency is not None and consistency.sglang is None else None
        return unused_entries(
            session.cases, session.not_expressible, baselines=session.baselines,
            hardware=session.settings.diffperf_hardware, thresholds=session.thresholds, gt_dir=gt_dir,
        )  # fmt: skip
