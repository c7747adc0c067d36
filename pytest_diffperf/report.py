"""Results of the run, gathered from test reports (so xdist workers' results arrive too).

Writes the ``--diffperf-json`` file, the terminal summary table and, when ``GITHUB_STEP_SUMMARY``
is set, the same table in Markdown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from .scenario import ScenarioResult

RESULT_PROPERTY = "diffperf_result"
SCENARIO_PROPERTY = "diffperf_scenario"
RESULTS_VERSION = 1


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
            self.results[report.nodeid] = ScenarioResult.from_json(props[RESULT_PROPERTY])
        if report.failed and self.results.get(report.nodeid, None) is None:
            first = str(report.longrepr).strip().splitlines()[:1]
            self.results[report.nodeid] = ScenarioResult(props[SCENARIO_PROPERTY], "error", message=" ".join(first))
        elif report.skipped and report.nodeid not in self.results:
            self.results[report.nodeid] = ScenarioResult(props[SCENARIO_PROPERTY], "skipped")

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        terminalreporter.section("diffperf summary")
        for line in text_table(table(self.results.values())):
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
            from .consistency import write_summary

            write_summary(compared, self.artifacts_dir)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as out:
                out.write(markdown(table(self.results.values()), self.header))

    def document(self) -> dict[str, Any]:
        return {
            "version": RESULTS_VERSION,
            **self.header,
            "rows": [row for r in self.results.values() for row in r.rows],
            "scenarios": [asdict(r) for r in self.results.values()],
            "servers": list(
                {(r.server["pid"], r.server["port"]): r.server for r in self.results.values() if r.server}.values()
            ),
        }


def table(results: Iterable[ScenarioResult]) -> list[list[str]]:
    """The summary table: a header row, then one row per scenario; an ``output`` column when outputs were compared."""
    results = list(results)
    compared = any(r.consistency for r in results)
    rows = [["scenario", "e2e ms", "expected", "limit", "worst check", "verdict"] + ["output"] * compared]
    for result in results:
        e2e = result.check("e2e") or {}
        worst = result.worst()
        worst_text = f"{worst['name']} {worst['actual'] / worst['limit']:.0%} of limit" if worst else "-"
        rows.append(
            [
                result.case,
                _num(e2e.get("actual")),
                _num(e2e.get("expected")),
                _num(e2e.get("limit")),
                worst_text,
                result.verdict.upper(),
            ]
            + [result.consistency["status"].upper() if result.consistency else "-"] * compared
        )
    return rows


def text_table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]


def markdown(table: list[list[str]], header: dict[str, Any]) -> str:
    title = f"### diffperf: profile `{header.get('profile')}` on `{header.get('hardware')}`\n\n"
    lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
    lines += ["| " + " | ".join(row) + " |" for row in table[1:]]
    return title + "\n".join(lines) + "\n\n"


def _num(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"
