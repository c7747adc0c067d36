"""This run among others, and its report file: the checks made when the session starts, the history it
joins, the earlier run it is compared with, and the HTML report.

Everything a run is asked to write or read is checked before a server starts (one
``DiffperfError`` naming the option): an HTML report needs matplotlib (the ``report`` extra), an
earlier results file must read as one, ``last`` needs a history with a run in it, and another run
still writing the same ``--diffperf-json`` refuses this one (``ResultsLock``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock, Timeout

from .._util.atomicfile import write_atomic
from .._util.text import format_table
from ..cases import lint_case_file
from ..errors import DiffperfError
from ..results import history, runcompare
from ..results.html import render, require_matplotlib
from ..results.merge import read_results, results_of
from ..results.model import ScenarioResult
from ..results.nextsteps import RunContext
from ..sglang.source import is_sglang_source
from .logdir import WorkerLogDir, distributed
from .options import LAST
from .session import DiffperfSession

COMPARED_KEY: pytest.StashKey[tuple[str, dict[str, Any]]] = pytest.StashKey()  # (what, its results document)


def configure_reporting(config: pytest.Config, session: DiffperfSession) -> None:
    """Check the run's report and history options (DiffperfError), then register the plugins that need it."""
    s = session.settings
    if s.diffperf_html is not None:
        require_matplotlib("--diffperf-html")  # writable: suite.validation, with the other outputs
        if session.consistency is not None and session.consistency.artifacts_dir is None:
            # the report shows each comparison image, which the check draws only into an artifacts folder
            artifacts = session.workdir / "artifacts"
            session.consistency = dataclasses.replace(session.consistency, artifacts_dir=artifacts)
    if s.diffperf_compare_to is not None and not hasattr(config, "workerinput"):
        config.stash[COMPARED_KEY] = earlier_run(s.diffperf_compare_to, s.diffperf_history)
    if s.diffperf_json is not None and not hasattr(config, "workerinput"):  # the controller writes it
        config.pluginmanager.register(ResultsLock.take(s.diffperf_json), "diffperf-results-lock")
    if distributed(config):
        config.pluginmanager.register(WorkerLogDir(session.workdir), "diffperf-worker-logs")


class ResultsLock:
    """Held from a run's start to its end: a second run writing the same ``--diffperf-json`` is refused at its
    start, not left to overwrite the first one's file silently. The lock file (``.NAME.run.lock`` beside the
    results file) stays; a run that died holds nothing."""

    def __init__(self, lock: FileLock):
        self.lock = lock

    @classmethod
    def take(cls, path: Path) -> ResultsLock:
        where = Path(path).resolve()
        lock = FileLock(str(where.with_name(f".{where.name}.run.lock")), timeout=0)
        if where.parent.is_dir():  # else the folder is made at the end, by the one run that names it
            try:
                lock.acquire()
            except Timeout:
                raise DiffperfError(
                    f"{path} is being written by another pytest run, which holds {lock.lock_file}: wait for it to "
                    "end, or write this run's results elsewhere",
                    source="--diffperf-json",
                ) from None
        return cls(lock)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.lock.release()


def earlier_run(given: Path, history_dir: Path | None) -> tuple[str, dict[str, Any]]:
    """The earlier results to compare with: a results file, or ``last``, the history's latest run."""
    if str(given) != LAST:
        return str(given), read_results(given)
    if history_dir is None:
        raise DiffperfError(
            "'last' is the latest run of --diffperf-history: set it too", source="--diffperf-compare-to"
        )
    runs = history.read(history_dir) if history_dir.is_dir() else []
    if not runs:
        raise DiffperfError(f"no earlier run in the history {history_dir}", source="--diffperf-compare-to")
    return f"{runs[-1].path} ({runs[-1].label})", runs[-1].document


def case_file_lines(session: DiffperfSession) -> list[str]:
    """Header lines for a JSON case file's lint errors (unknown keys are typos a run would ignore)."""
    path = session.settings.diffperf_cases
    if path is None or is_sglang_source(path) or not path.is_file():
        return []
    errors = [f for f in lint_case_file(path) if f.severity == "error"]
    if not errors:
        return []
    shown = "; ".join(f"{f.key}: {f.message}" for f in errors[:3]) + (
        f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
    )
    return [f"diffperf: warning: case file {path}: {len(errors)} problem(s) ({shown}); see: diffperf lint {path}"]


def comparison_lines(session: DiffperfSession, results: list[ScenarioResult], config: pytest.Config) -> list[str]:
    what, document = config.stash[COMPARED_KEY]
    deltas = runcompare.compare(results, results_of(document))
    return ["", f"diffperf: against {what}:", *format_table(runcompare.table(deltas))]


def write_html(
    session: DiffperfSession, config: pytest.Config, document: dict[str, Any], results: list[ScenarioResult]
) -> Path:
    s = session.settings
    assert s.diffperf_html is not None
    runs = history.read(s.diffperf_history) if s.diffperf_history is not None and s.diffperf_history.is_dir() else []
    compared = config.stash.get(COMPARED_KEY, None)
    deltas = runcompare.compare(results, results_of(compared[1])) if compared else []
    steps = {sid: dict(b.steps) for sid, b in session.baselines.scenarios.items()}
    text = render(
        results,
        {k: v for k, v in document.items() if k not in ("rows", "scenarios", "servers", "provenance", "version")},
        document.get("provenance"),
        history=history.series(runs) if len(runs) > 1 else (),
        comparison=deltas,
        compared_to=compared[0] if compared else "",
        baseline_steps=steps,
        run=RunContext.of(document, str(s.diffperf_json) if s.diffperf_json else None,
                          str(s.diffperf_gt_dir) if s.diffperf_gt_dir else None),
    )  # fmt: skip
    write_atomic(s.diffperf_html, text)
    return s.diffperf_html
