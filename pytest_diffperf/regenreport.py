"""The regeneration summary, printed by the controller from test reports (so xdist workers' decisions arrive).

Per scenario: added / replaced / tightened / kept (reason); per field, how many values went
down and up; the largest relative changes. A dry run adds the unified diff of every file.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from ._util.text import format_table
from .regen import ACTIONS, RegenSettings
from .regenfile import diff

REGEN_PROPERTY = "diffperf_regen"
LARGEST = 5
MIN_ABS_CHANGE = 1.0  # ms or MiB: smaller changes (0.02 -> 0.03 ms) are not listed among the largest


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


def summary_lines(records: list[dict[str, Any]], settings: RegenSettings) -> list[str]:
    """The summary as text lines."""
    if not records:
        return ["no scenario was regenerated"]
    counts = Counter(r["action"] for r in records)
    written = sorted({r["file"] for r in records if r["written"]})
    mode = "dry run, nothing written" if settings.dry_run else f"written: {', '.join(written) or 'nothing'}"
    lines = [
        f"policy {settings.policy}: " + ", ".join(f"{counts[a]} {a}" for a in ACTIONS if counts[a]) + f" ({mode})",
        "",
    ]
    lines += format_table(
        [("scenario", "action", "reason")] + [(r["scenario"], r["action"], r["reason"]) for r in records], right_from=None
    )
    changed = [(r["scenario"], *c) for r in records for c in r["changes"] if c[1] is not None]
    if changed:
        lines += ["", *format_table(_field_counts(changed), right_from=1)]
        largest = _largest(changed)
        if len(largest) > 1:
            lines += ["", "largest relative changes:", *format_table(largest, right_from=2)]
    return lines


def _field_counts(changed: list[tuple[str, str, float | None, float]]) -> list[tuple[str, ...]]:
    lowered: Counter[str] = Counter()
    raised: Counter[str] = Counter()
    for _, key, old, new in changed:
        group = key.split(".", 1)[0] + ".*" if key.startswith("denoise_step_ms.") else key
        (lowered if new < old else raised)[group] += 1
    fields = sorted(set(lowered) | set(raised))
    return [("field", "lowered", "raised")] + [(f, str(lowered[f]), str(raised[f])) for f in fields]


def _largest(changed: list[tuple[str, str, float | None, float]]) -> list[tuple[str, ...]]:
    relative = [
        (new / old - 1, sid, key, old, new)
        for sid, key, old, new in changed
        if old and abs(new - old) >= MIN_ABS_CHANGE
    ]
    relative.sort(key=lambda x: -abs(x[0]))
    rows = [("scenario", "field", "old", "new", "change")]
    return rows + [
        (sid, key, f"{old:.2f}", f"{new:.2f}", f"{rel:+.1%}") for rel, sid, key, old, new in relative[:LARGEST]
    ]
