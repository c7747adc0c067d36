"""One step of ``diffperf bisect``: an A/B run (pytest, as a process) of the good commit against another, judged.

The step runs ``python -m pytest`` with the user's arguments, ``--diffperf-base=git=GOOD`` and
``--diffperf-candidate=git=COMMIT`` (the same SUBDIR, repository and install for both), and its
own results file and log. The step's verdict is the scenarios' (or ``--metric``'s): ``regressed``
when any is, ``unchanged`` / ``improved`` when all are decided, else ``inconclusive``.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._util.lifecycle import exit_text, run_to_end
from ..errors import DiffperfError
from ..perf.limits import stage_name
from ..results.merge import read_results, results_of
from ..results.model import ABMetricRecord, ABRecord
from ..verdicts.metrics import E2E, stage_of
from ..verdicts.vocab import Verdict

LOG_TAIL_LINES = 20
PYTEST_NO_TESTS = 5  # pytest's exit code when -k selected nothing


@dataclass(frozen=True)
class Sides:
    """How both sides of every step are built from a commit: ``git=COMMIT[:SUBDIR]`` with these items."""

    repo: Path
    subdir: str = ""
    install: str | None = None  # None: served from the worktree; else pip's extra arguments ("" for none)
    cache: Path | None = None  # the kept worktrees (reused across steps); None with install (venvs are cached)

    def spec(self, commit: str) -> str:
        items = [f"git={commit}" + (f":{self.subdir}" if self.subdir else ""), f"repo={self.repo}"]
        if self.install is not None:
            items.append(f"install={self.install}" if self.install.strip() else "install")
        if self.cache is not None:
            items.append(f"cache={self.cache}")
        return "; ".join(items)


@dataclass(frozen=True)
class StepResult:
    """What one A/B run of a step said."""

    verdict: Verdict
    scenario: str  # the scenario that decided it (the regressed one, else the one with the largest ratio)
    metric: ABMetricRecord | None  # that scenario's judged metric
    record: ABRecord  # that scenario's A/B record
    requests: int  # measured requests of every scenario
    process_pairs: int  # the most process pairs a scenario used
    wall_s: float
    results: Path
    log: Path

    def interval(self) -> str:
        m = self.metric
        if m is None or m.ratio is None:
            return "no interval"
        low, high = (f"{(x - 1) * 100:+.1f}" if x is not None else "?" for x in (m.low, m.high))
        return f"{_metric_label(m.name)} {(m.ratio - 1) * 100:+.1f} % [{low}, {high}]"

    def explained_by(self) -> str | None:
        """The stage that explains the change, with its share (None: no stage was named)."""
        a = self.record.attribution
        if a is None or not a.named:
            return None
        stage = next(s for s in a.stages if s.stage == a.named[0])
        share = f" explains {stage.share * 100:.0f} %" if stage.share is not None and math.isfinite(stage.share) else ""
        return f"{stage.stage}{share}"


def metric_name(text: str | None) -> str | None:
    """``--metric``: ``e2e``, a stage's name or ``stage[NAME]``; None: the scenarios' own (gated) verdicts."""
    if text is None:
        return None
    text = text.strip()
    if not text:
        raise DiffperfError("expected e2e or a stage's name (DenoisingStage), got nothing", source="--metric")
    return text if text == E2E or stage_of(text) is not None else stage_name(text)


def _metric_label(name: str) -> str:
    return stage_of(name) or name


def run_step(
    sides: Sides,
    good: str,
    commit: str,
    pytest_args: Sequence[str],
    folder: Path,
    name: str,
    metric: str | None,
    budget: Sequence[str] = (),
) -> StepResult:
    """Run the A/B of ``good`` against ``commit`` and judge it (``DiffperfError`` when pytest itself failed)."""
    results, log = folder / f"{name}.json", folder / f"{name}.log"
    results.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", *pytest_args, f"--diffperf-base={sides.spec(good)}",
        f"--diffperf-candidate={sides.spec(commit)}", f"--diffperf-json={results}", *budget,
    ]  # fmt: skip
    started = time.monotonic()
    with log.open("w") as out:
        out.write(" ".join(command) + "\n")
        out.flush()
        code = run_to_end(command, out)  # interrupted: the step's pytest stops its servers and worktrees first
    wall_s = time.monotonic() - started
    if code == PYTEST_NO_TESTS:
        raise DiffperfError(
            f"the pytest arguments selected no scenario, or every one was skipped (log: {log})", source="-k"
        )
    if code not in (0, 1) or not results.is_file():
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
        raise DiffperfError(
            f"pytest ended with {exit_text(code)} without a verdict (log: {log}):\n{tail}", source=f"step {name}"
        )
    return judge_step(read_results(results), metric, wall_s, results, log)


def judge_step(doc: dict[str, Any], metric: str | None, wall_s: float, results: Path, log: Path) -> StepResult:
    """A step's verdict from its results file (see the module docstring)."""
    judged: list[tuple[str, Verdict, ABMetricRecord | None, ABRecord]] = []
    for scenario in results_of(doc):
        record = scenario.ab
        if record is None:
            continue  # not judged A/B (run_perf_check false, or no case)
        m = record.metric(metric or E2E)
        if metric is not None and m is None:
            names = ", ".join(_metric_label(x.name) for x in record.metrics)
            raise DiffperfError(f"{scenario.scenario} has no metric {metric!r}; it has {names}", source="--metric")
        judged.append((scenario.scenario, m.verdict if metric is not None and m else record.verdict, m, record))
    if not judged:
        raise DiffperfError(f"no scenario was judged A/B (results: {results})", source="-k")
    verdicts = {v for _, v, _, _ in judged}
    verdict: Verdict = (
        "regressed" if "regressed" in verdicts
        else "inconclusive" if "inconclusive" in verdicts
        else "improved" if verdicts == {"improved"}
        else "unchanged"
    )  # fmt: skip
    deciding = [j for j in judged if j[1] == verdict] or judged
    name, _, m, record = max(deciding, key=lambda j: j[2].ratio if j[2] and j[2].ratio is not None else -math.inf)
    return StepResult(
        verdict=verdict,
        scenario=name,
        metric=m,
        record=record,
        requests=sum(j[3].requests for j in judged),
        process_pairs=max(j[3].process_pairs for j in judged),
        wall_s=wall_s,
        results=results,
        log=log,
    )
