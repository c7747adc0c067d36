"""`diffperf trend DIR`: each scenario's series over the runs of a history folder, and its change points."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from .._util.text import format_table
from .._util.values import BadValue, argtype, count, fraction_below_one
from ..errors import DiffperfError
from ..results import history
from ..results.tables import num, pct
from ..verdicts.changepoint import ALPHA, MIN_CHANGE, MIN_SIZE


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "trend",
        help="each scenario's series over a history of runs, with its change points",
        description="Read a history folder (pytest --diffperf-history DIR: one results file per run) and print, "
        "per scenario, its judged e2e (or another metric) over the runs and the steps in that series: "
        "change points found by Pettitt's rank test with a permutation p-value, each side holding at least "
        "--min-size runs and the medians differing by at least --min-change, so that one odd run is no step. "
        "Exit status 1 when a scenario's last step is a slowdown (--fail-on-step), else 0; 2 on a bad folder.",
    )
    parser.add_argument("folder", metavar="DIR", help="the history folder")
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="default: every scenario")
    parser.add_argument(
        "--metric", default="e2e_ms", help="e2e_ms (default), load_ms, avg_step_ms, median_step_ms or stage:NAME"
    )
    parser.add_argument(
        "--alpha", type=argtype(_alpha), default=ALPHA, help=f"significance of a step (default: {ALPHA})"
    )
    parser.add_argument(
        "--min-size", type=argtype(count), default=MIN_SIZE, help=f"runs on each side of a step (default: {MIN_SIZE})"
    )
    parser.add_argument(
        "--min-change",
        type=argtype(fraction_below_one),
        default=MIN_CHANGE,
        help=f"smallest step, as a fraction (default: {MIN_CHANGE})",
    )
    parser.add_argument("--series", action="store_true", help="print every value of each series too")
    parser.add_argument("--fail-on-step", action="store_true", help="exit 1 when a scenario's last step is a slowdown")
    parser.add_argument("--json", action="store_true", help="print the series and change points as JSON")
    parser.set_defaults(func=run)


def _alpha(text: str) -> float:
    """``--alpha``: a significance level in (0, 1)."""
    value = fraction_below_one(text)
    if value <= 0:
        raise BadValue(f"expected a significance level in (0, 1) such as 0.01, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    runs = history.read(Path(args.folder))
    if not runs:
        raise DiffperfError("no results file (*.json) in the folder", source=args.folder)
    found = history.series(runs, args.metric, alpha=args.alpha, min_size=args.min_size, min_change=args.min_change)
    if found and not any(s.present for s in found):  # a stage no run measured: empty series are no trend
        raise DiffperfError(
            f"no run of the history has {args.metric} for any scenario"
            + (f" (stages measured: {', '.join(stages)})" if (stages := history.stages(runs)) else ""),
            source="--metric",
        )
    if args.scenarios:
        known = {s.scenario for s in found}
        missing = [name for name in args.scenarios if name not in known]
        if missing:
            raise DiffperfError(f"no scenario {', '.join(missing)} in the history", source=args.folder)
        found = [s for s in found if s.scenario in args.scenarios]
    slower = [s for s in found if s.changes and s.changes[-1].change > 0]
    if args.json:
        print(json.dumps([_data(s) for s in found], indent=2))
    else:
        _print(runs, found, args)
    return 1 if args.fail_on_step and slower else 0


def _print(runs: list[history.Run], found: list[history.Series], args: argparse.Namespace) -> None:
    print(
        f"diffperf trend: {len(runs)} run(s) in {args.folder}, from {runs[0].label} to {runs[-1].label}; {args.metric}"
    )
    rows = [["scenario", "runs", "first", "last", "median", "change points"]]
    for s in found:
        values = [v for _, v in s.present]
        steps = ", ".join(
            f"{pct(c.change)} at run {c.index + 1} ({s.labels[c.index]}, p={c.p_value:.3f})" for c in s.changes
        )
        median = sorted(values)[len(values) // 2] if values else None
        rows.append(
            [s.scenario, str(len(values)), num(values[0] if values else None), num(s.last), num(median), steps or "-"]
        )
    for line in format_table(rows, right_from=None):
        print(line)
    if args.series:
        for s in found:
            print(f"\n{s.scenario}:")
            marks = {c.index for c in s.changes}
            for i, (label, value, outcome) in enumerate(zip(s.labels, s.values, s.outcomes, strict=True)):
                step = "  <- step" if i in marks else ""
                print(f"  {i + 1:>3}  {label:<24} {num(value):>10}  {outcome or '-'}{step}")


def _data(s: history.Series) -> dict[str, object]:
    return {
        "scenario": s.scenario,
        "metric": s.metric,
        "runs": list(s.labels),
        "values": list(s.values),
        "outcomes": list(s.outcomes),
        "change_points": [{**asdict(c), "change": c.change} for c in s.changes],
    }
