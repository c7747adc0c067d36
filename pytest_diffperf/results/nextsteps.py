"""What to do about the scenarios that did not pass: the ``next:`` lines the terminal summary, the step
summary and the HTML report end with.

A failure's own ``next:`` (the regeneration and ``diffperf show`` commands) is in the failing test's
report; these are the run-wide ones: an inconclusive verdict (record this machine when it is quiet, run A/B, more
requests or servers, calibrate the noise; for an A/B run more process pairs and the noise) and an
output that differs from its ground truth (``pytest --regen-ground-truth -k ID``).
"""

from __future__ import annotations

import shlex
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .model import ScenarioResult
from .stale import stale_note
from .tables import reason


@dataclass(frozen=True)
class RunContext:
    """What the commands name: this run's results file, baseline files and ground-truth folder, and whether the
    run was A/B."""

    results_file: str | None = None
    baselines: Sequence[str] = ()
    gt_dir: str | None = None
    ab: bool = False

    @classmethod
    def of(cls, header: Mapping[str, Any], results_file: str | None = None, gt_dir: str | None = None) -> RunContext:
        """From a results file's header (``pytest`` and ``diffperf merge`` write the same one)."""
        baselines = header.get("baselines") or []
        return cls(results_file, [str(b) for b in baselines], gt_dir, bool(header.get("base")))


CALIBRATE = "diffperf calibrate --ab AA.json --history DIR -o noise.json, then --diffperf-noise=noise.json"


def select(scenario: str) -> list[str]:
    """``-k ID`` (the node id is the safer choice when ``-k ID`` matches more: the failure's own ``next:`` says)."""
    return ["-k", scenario]


def inconclusive_next(ids: Sequence[str], run: RunContext) -> list[tuple[str, str]]:
    """The ways out of an inconclusive verdict, as (what, how) pairs ([] when no id)."""
    if not ids:
        return []
    only = select(ids[0]) if len(ids) == 1 else []
    if run.ab:
        return [
            ("more process pairs", "--diffperf-ab-max-process-pairs=20 --diffperf-ab-max-requests=160"),
            ("calibrate the noise", f"{CALIBRATE} (from an A/A run; docs/verdicts.md)"),
        ]
    baseline = run.baselines[0] if run.baselines else "FILE"
    regen = shlex.join(["pytest", "--regen-baselines", f"--diffperf-baselines={baseline}", *only])
    record = f"diffperf accept {run.results_file} (or {regen})" if run.results_file else regen
    return [
        ("record this machine when it is quiet", record),
        ("run A/B", "--diffperf-base=current (or python=BASE-VENV/bin/python: the base build)"),
        ("more requests or servers", "perf_repeat_requests in the case, --diffperf-remeasure=5"),
        ("calibrate the noise", f"{CALIBRATE} (docs/verdicts.md)"),
    ]


def ground_truth_next(
    scenario: str, run: RunContext, repeated: Sequence[str] = (), selection: Sequence[str] | None = None
) -> str:
    """The command that writes a scenario's output as its ground truth (when the change is intended): the run's
    ``repeated`` options, its ground-truth folder, ``selection`` (default ``-k ID``)."""
    gt = (
        [f"--diffperf-gt-dir={run.gt_dir}"]
        if run.gt_dir and not any("--diffperf-gt-dir" in a for a in repeated)
        else []
    )
    chosen = select(scenario) if selection is None else list(selection)
    return shlex.join(["pytest", "--regen-ground-truth", *repeated, *gt, *chosen])


def not_passed(results: Sequence[ScenarioResult]) -> list[ScenarioResult]:
    """Every scenario that did not pass (skipped ones aside)."""
    return [r for r in results if r.outcome not in ("pass", "skipped")]


def next_lines(r: ScenarioResult, run: RunContext) -> list[tuple[str, str]]:
    """One scenario's ``next:`` pairs: its output's ground truth, and an inconclusive verdict's ways out."""
    out = []
    if r.consistency_status == "fail":
        out.append(("if the output change is intended", ground_truth_next(r.scenario, run)))
    if r.verdict == "inconclusive":
        out += inconclusive_next([r.scenario], run)
    return out


def details(results: Sequence[ScenarioResult], run: RunContext) -> list[str]:
    """Under the summary table: each scenario that did not pass, its whole reason and the lines under its
    message's first (an inconclusive verdict's checks), then ``next:`` (once for the inconclusive ones); then
    each pass far faster than its baseline (``stale baseline?``, with the command that records it)."""
    stale = [f"  {r.scenario}: {note}" for r in results if r.outcome == "pass" and (note := stale_note(r))]
    stale = ["passed far faster than the baseline:", *stale] if stale else []
    shown = not_passed(results)
    if not shown:
        return stale
    lines = ["not passed:"]
    for r in shown:
        lines.append(f"  {r.scenario} ({r.outcome}): {reason(r)}")
        if r.verdict == "inconclusive":
            lines += [f"    {line.strip()}" for line in r.message.strip().splitlines()[1:] if line.strip()]
        if r.consistency_status == "fail":
            lines.append(f"    next, if the output change is intended: {ground_truth_next(r.scenario, run)}")
    unsure = [r.scenario for r in shown if r.verdict == "inconclusive"]
    steps = inconclusive_next(unsure, run)
    if steps:
        which = unsure[0] if len(unsure) == 1 else f"{len(unsure)} inconclusive scenarios"
        lines.append(f"  next, for {which}:")
        lines += [f"    {what}: {how}" for what, how in steps]
    return lines + stale


def wrapped(lines: Sequence[str], width: int) -> list[str]:
    """Lines wrapped at ``width`` between words, each continuation indented 4 more than its line (a path or
    command is never split)."""
    out = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)
    return out
