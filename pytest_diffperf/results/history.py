"""The pytest runs' history: a folder holding one results file per run, and each scenario's series in it.

``pytest --diffperf-history DIR`` writes its results document (the ``--diffperf-json`` form, with
its ``provenance``) as ``DIR/<UTC time>-<commit>.json``: one file per run, so concurrent shards and
CI jobs never write the same file and a job can download earlier runs' files into the folder. Any
folder of results files is a history (``diffperf merge -o`` output too). ``diffperf trend DIR``,
the HTML report and ``--diffperf-compare-to last`` read it, oldest first (by provenance time, then
file name). ``diffperf compare``'s JSONL file of its runs is its journal (``compare/journal.py``), not this.

A scenario's series is one metric per run: by default its judged e2e (``measured.e2e_ms``, the
preset's statistic over its requests), or ``load_ms``, ``avg_step_ms``, ``median_step_ms``, or a
stage (``stage:DenoisingStage``, the median over the run's requests). Runs where the metric is
missing (an error, a skip) stay in the series as gaps. Change points come from
:func:`pytest_diffperf.verdicts.changepoint.change_points`.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from .._util.atomicfile import dumps_json, write_atomic
from .._util.git import is_commit
from ..errors import DiffperfError
from ..verdicts.changepoint import ALPHA, MIN_CHANGE, MIN_SIZE, ChangePoint, change_points
from .merge import read_results, results_of
from .model import ScenarioResult

METRICS = ("e2e_ms", "load_ms", "avg_step_ms", "median_step_ms")
STAGE_PREFIX = "stage:"


@dataclass(frozen=True)
class Run:
    """One run of the history: its file and document."""

    path: Path
    document: dict[str, Any]

    @cached_property
    def results(self) -> list[ScenarioResult]:
        """Its scenarios, each with its request rows."""
        return results_of(self.document)

    @property
    def timestamp(self) -> str:
        return str((self.document.get("provenance") or {}).get("timestamp") or "")

    @property
    def commit(self) -> str:
        return str((self.document.get("provenance") or {}).get("commit") or "")

    @property
    def label(self) -> str:
        """``2026-05-01 12:00 abc1234`` (time and short commit)."""
        stamp = self.timestamp.replace("T", " ")[:16]
        return " ".join(p for p in (stamp, self.commit[:7]) if p) or self.path.stem


def file_name(document: dict[str, Any]) -> str:
    """``20260501T120000Z-abc123456789.json`` from the document's provenance."""
    provenance = document.get("provenance") or {}
    stamp = re.sub(r"[^0-9T]", "", str(provenance.get("timestamp") or ""))[:15] or "undated"
    commit = str(provenance.get("commit") or "")
    commit = commit[:12] if is_commit(commit) else "nocommit"  # never a path: the document may come from anywhere
    return f"{stamp}Z-{commit}.json"


def save(folder: Path, document: dict[str, Any]) -> Path:
    """Write the document into the history folder under a new name; returns the file."""
    if folder.exists() and not folder.is_dir():
        raise DiffperfError("is a file; expected a history folder", source=str(folder))
    name = file_name(document)
    path = folder / name
    number = 1
    while path.exists():
        number += 1
        path = folder / f"{Path(name).stem}-{number}.json"
    try:
        write_atomic(path, dumps_json(document))
    except OSError as exc:
        raise DiffperfError(f"cannot write: {exc.strerror or exc}", source=str(path)) from None
    return path


def read(folder: Path) -> list[Run]:
    """Every results file in the folder, oldest first; a file that is not one is an error naming it."""
    if not folder.is_dir():
        raise DiffperfError("not a folder" if folder.exists() else "folder not found", source=str(folder))
    runs = [Run(path, read_results(path)) for path in sorted(folder.glob("*.json"))]
    return sorted(runs, key=lambda r: (r.timestamp, r.path.name))


def check_metric(metric: str) -> str:
    if metric in METRICS or (metric.startswith(STAGE_PREFIX) and len(metric) > len(STAGE_PREFIX)):
        return metric
    raise DiffperfError(
        f"unknown metric {metric!r}; expected one of: {', '.join(METRICS)}, or {STAGE_PREFIX}NAME", source="--metric"
    )


def value_of(scenario: ScenarioResult, metric: str) -> float | None:
    """A scenario's metric in one run (None when it has none)."""
    if metric.startswith(STAGE_PREFIX):
        stage = metric[len(STAGE_PREFIX) :]
        times = [row.stages_ms[stage] for row in scenario.rows if stage in row.stages_ms]
        return float(statistics.median(times)) if times else None
    return scenario.measured.get(metric)


def stages(runs: Sequence[Run]) -> list[str]:
    """Every stage the runs' requests measured, sorted."""
    return sorted({stage for run in runs for r in run.results for row in r.rows for stage in row.stages_ms})


@dataclass(frozen=True)
class Series:
    """One scenario's metric over the runs (None where a run lacks it), and the steps found in it."""

    scenario: str
    metric: str
    labels: tuple[str, ...]  # each run's label
    values: tuple[float | None, ...]
    outcomes: tuple[str | None, ...]  # None: the run has no such scenario
    changes: tuple[ChangePoint, ...]  # indices into the runs

    @property
    def present(self) -> list[tuple[int, float]]:
        return [(i, v) for i, v in enumerate(self.values) if v is not None]

    @property
    def last(self) -> float | None:
        present = self.present
        return present[-1][1] if present else None


def series(
    runs: Sequence[Run],
    metric: str = "e2e_ms",
    *,
    alpha: float = ALPHA,
    min_size: int = MIN_SIZE,
    min_change: float = MIN_CHANGE,
) -> list[Series]:
    """Each scenario's series (scenarios in order of first appearance), with its change points."""
    check_metric(metric)
    names: dict[str, None] = {}
    per_run: list[dict[str, ScenarioResult]] = []
    for run in runs:
        scenarios = {s.scenario: s for s in run.results}
        per_run.append(scenarios)
        names.update(dict.fromkeys(scenarios))
    labels = tuple(run.label for run in runs)
    out = []
    for name in names:
        entries = [scenarios.get(name) for scenarios in per_run]
        values = tuple(value_of(e, metric) if e is not None else None for e in entries)
        outcomes = tuple(e.outcome if e is not None else None for e in entries)
        present = [(i, v) for i, v in enumerate(values) if v is not None]
        found = change_points([v for _, v in present], alpha=alpha, min_size=min_size, min_change=min_change)
        changes = tuple(
            ChangePoint(present[c.index][0], c.before, c.after, c.p_value) for c in found
        )  # indices of the runs, gaps counted
        out.append(Series(name, metric, labels, values, outcomes, changes))
    return out
