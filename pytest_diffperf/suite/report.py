"""Results of the run, gathered from test reports (so xdist workers' results arrive too).

Writes the ``--diffperf-json`` file, the terminal summary table and, when ``GITHUB_STEP_SUMMARY``
is set, the same table in Markdown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .._util.ci import append_step_summary
from .._util.text import format_table
from ..results.model import RESULTS_VERSION, ScenarioResult
from ..results.tables import markdown, summary_table

RESULT_PROPERTY = "diffperf_result"
SCENARIO_PROPERTY = "diffperf_scenario"
SERVER_PROPERTY = "diffperf_server"  # the server of a scenario that failed without a result (JSON)


class ResultsCollector:
    def __init__(self, header: dict[str, Any], json_path: Path | None, artifacts_dir: Path | None = None):
        self.header = header
        self.json_path = json_path
        self.artifacts_dir = artifacts_dir  # where the consistency summary.json goes
        self.results: dict[str, ScenarioResult] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if SCENARIO_PROPERTY not in props:
            return
        if RESULT_PROPERTY in props:
            self.results[report.nodeid] = ScenarioResult.model_validate_json(str(props[RESULT_PROPERTY]))
        if report.failed and self.results.get(report.nodeid, None) is None:
            first = str(report.longrepr).strip().splitlines()[:1]
            server = json.loads(str(props[SERVER_PROPERTY])) if SERVER_PROPERTY in props else None
            self.results[report.nodeid] = ScenarioResult(
                scenario=str(props[SCENARIO_PROPERTY]), verdict="error", message=" ".join(first), server=server
            )
        elif report.skipped and report.nodeid not in self.results:
            self.results[report.nodeid] = ScenarioResult(scenario=str(props[SCENARIO_PROPERTY]), verdict="skipped")

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        terminalreporter.section("diffperf summary")
        for line in format_table(summary_table(self.results.values()), right_from=None):
            terminalreporter.write_line(line)
        if self.json_path:
            terminalreporter.write_line(f"diffperf results: {self.json_path}")

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.results:
            return  # xdist workers report through the controller
        if self.json_path:
            self.json_path.parent.mkdir(parents=True, exist_ok=True)
            self.json_path.write_text(json.dumps(self.document(), indent=2) + "\n", encoding="utf-8")
        compared = [r.consistency for r in self.results.values() if r.consistency]
        if self.artifacts_dir and compared:
            from ..consistency import write_summary

            write_summary(compared, self.artifacts_dir)
        append_step_summary(markdown(summary_table(self.results.values()), self.header))

    def document(self) -> dict[str, Any]:
        return {
            "version": RESULTS_VERSION,
            **self.header,
            "rows": [row for r in self.results.values() for row in r.rows],
            "scenarios": [r.document() for r in self.results.values()],
            "servers": list(
                {(r.server["pid"], r.server["port"]): r.server for r in self.results.values() if r.server}.values()
            ),
        }
