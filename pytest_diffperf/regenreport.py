"""The regeneration summary, printed by the controller from test reports (so xdist workers' decisions arrive).

A dry run adds the unified diff of every file.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from .regen.policy import RegenSettings
from .regen.summary import summary_lines
from .regen.writer import diff

REGEN_PROPERTY = "diffperf_regen"


class RegenSummary:
    def __init__(self, settings: RegenSettings, metadata: dict[str, str]):
        self.settings = settings
        self.metadata = metadata
        self.records: dict[str, dict[str, Any]] = {}

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == REGEN_PROPERTY:
                self.records[report.nodeid] = json.loads(value)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        write = terminalreporter.write_line
        terminalreporter.section("diffperf baseline regeneration")
        for line in summary_lines(list(self.records.values()), self.settings):
            write(line)
        if self.settings.dry_run:
            for text in self.diffs():
                terminalreporter.write(text)

    def diffs(self) -> list[str]:
        per_file: dict[str, list[tuple[str, dict]]] = defaultdict(list)
        for record in self.records.values():
            if record["action"] != "kept":
                per_file[record["file"]].append((record["scenario"], record["entry"]))
        return [diff(Path(file), entries, self.metadata) for file, entries in per_file.items()]
