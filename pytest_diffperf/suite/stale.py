"""The run's report of stale baselines and cases without one (``perf.coverage``), after the summary.

Only the selected scenarios count (``-k``, ``--diffperf-shard``), as syrupy reports unused
snapshots. Without xdist they come from this process's collection; on an xdist controller, which
collects nothing, from the node ids each worker collected (``pytest_xdist_node_collection_finished``),
so the report is the same with and without ``-n``, ``--co`` included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from ..perf.coverage import unmatched_scenarios
from .session import DiffperfSession
from .stash import SCENARIO_KEY


class StaleReport:
    def __init__(self, session: DiffperfSession, config: pytest.Config):
        self.session = session
        self.config = config
        self.selected: dict[str, None] = {}  # scenario ids, in collection order

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            scenario = item.stash.get(SCENARIO_KEY, None)
            if scenario is not None:
                self.selected[scenario] = None

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        primary = self.session.baselines.primary
        for nodeid in ids:
            path, _, name = nodeid.rpartition("::")
            if name and (self.config.rootpath / path).resolve() == primary.resolve():
                self.selected[name] = None

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        found = unmatched_scenarios(self.session.baselines, self.session.cases, self.selected)
        if not found:
            return
        cases = self.session.settings.diffperf_cases
        terminalreporter.section("diffperf: baselines and cases that do not meet", sep="-")
        baselines = _shown(self.session.baselines.primary, self.config) or str(self.session.baselines.primary)
        for line in found.lines(baselines, _shown(cases, self.config)):
            terminalreporter.write_line(line)


def _shown(path: Any, config: pytest.Config) -> str | None:
    if path is None:
        return None
    try:
        return str(path.relative_to(config.invocation_params.dir))
    except ValueError:
        return str(path)
