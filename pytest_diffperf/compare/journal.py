"""The comparison journal: one ``diffperf compare`` results document per line of a JSONL file, and each case's
latency trend over them (``diffperf compare --journal FILE``, ``--report FILE``).

Not the history folder of pytest's runs (``results/history.py``: one results file per run, ``--diffperf-history``,
``diffperf trend``): a journal is one file that comparisons append to.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from .._util.jsonfile import validate
from ..errors import DiffperfError


class JournalResult(BaseModel):
    """One case on one framework in a comparison run."""

    model_config = ConfigDict(extra="allow")

    case_id: str
    framework: str
    latency_s: float | None = None
    error: str | None = None


class JournalEntry(BaseModel):
    """One comparison run: its time, commit and each case's result."""

    model_config = ConfigDict(extra="allow")

    timestamp: str
    commit_sha: str = "unknown"
    results: list[JournalResult]


def append(path: Path, document: dict[str, Any]) -> None:
    """Add one run (the results document) as one line."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(document) + "\n")
    except OSError as exc:
        raise DiffperfError(f"cannot append: {exc.strerror}", source=str(path)) from None


def read(path: Path) -> list[JournalEntry]:
    """Every run in the file, oldest first; a bad line is an error naming the file and line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DiffperfError("file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DiffperfError(f"cannot read: {exc}", source=str(path)) from None
    runs = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DiffperfError(f"invalid JSON: {exc.msg} at column {exc.colno}", source=where) from None
        runs.append(validate(JournalEntry, data, Path(where), ""))
    return runs


@dataclass(frozen=True)
class Trend:
    """A case's last run against the median latency of its earlier measured runs."""

    case_id: str
    framework: str
    runs: int
    last: JournalResult
    commit_sha: str
    previous: tuple[float, ...]

    @property
    def baseline_s(self) -> float | None:
        return statistics.median(self.previous) if self.previous else None

    @property
    def change(self) -> float | None:
        base, last = self.baseline_s, self.last.latency_s
        return last / base - 1 if base and last is not None else None


def trends(runs: list[JournalEntry]) -> list[Trend]:
    """One trend per (case, framework), in order of first appearance."""
    seen: dict[tuple[str, str], list[tuple[JournalResult, str]]] = {}
    for run in runs:
        for row in run.results:
            seen.setdefault((row.case_id, row.framework), []).append((row, run.commit_sha))
    out = []
    for (case_id, framework), rows in seen.items():
        (last, sha), earlier = rows[-1], rows[:-1]
        previous = tuple(r.latency_s for r, _ in earlier if r.latency_s is not None and not r.error)
        out.append(Trend(case_id, framework, len(rows), last, sha, previous))
    return out
