"""`diffperf merge FILE... -o OUT`: one results file and one summary from the shards' results."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from .._util.atomicfile import write_atomic
from .._util.ci import STEP_SUMMARY_ENV, append_step_summary, step_summary_path
from .._util.outputs import check_writable
from .._util.text import format_table
from ..errors import DiffperfError
from ..perf.scenarios import CLI_FLAGS, load_scenario_set
from ..results.merge import failing, merge, missing, outcome_counts, read_results, results_of
from ..results.model import ScenarioResult, nothing_judged, skipped_line
from ..results.nextsteps import RunContext, details, wrapped
from ..results.stepsummary import markdown
from ..results.tables import REASON_WIDTH, summary_table

EMPTY_EXIT = 5  # nothing judged: pytest's "no tests ran"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="merge the results files of shards into one, with one summary",
        description="Merge --diffperf-json files (of shards, or of xdist-less separate runs) into one file and "
        "print one summary (also appended as Markdown to $GITHUB_STEP_SUMMARY when set). Exit status 1 "
        "when a scenario failed (performance or consistency) or errored, or was inconclusive in runs with "
        "--diffperf-inconclusive=fail, or when --expect-all finds scenarios that ran in no file; exit status 5 "
        "when nothing was judged (every scenario skipped: wrong runner labels, dry runs), unless --allow-empty.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="results files (results-*.json)")
    parser.add_argument("-o", "--output", help="write the merged results here")
    parser.add_argument("--markdown", help="also write the Markdown summary to this file")
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="exit 0 when every scenario was skipped (nothing judged), as a merge of dry runs is",
    )
    parser.add_argument("--expect-all", metavar="BASELINE", help="every scenario of this baseline file must have run")
    parser.add_argument("--hardware", help="platform, to pick scenarios (and the file of a folder) for --expect-all")
    parser.add_argument(
        "--cases",
        help="the case file or SGLang's case lists the shards ran (as --diffperf-cases): --expect-all then also "
        "expects the cases without a baseline scenario, as pytest and diffperf plan select them",
    )
    parser.add_argument("--suites", help="SGLang's suites the shards ran, as --diffperf-suites (with --cases)")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write the HTML report here (needs the report extra; with --expect-all the baseline's steps too)",
    )
    parser.add_argument(
        "--history", metavar="DIR", help="a history folder (--diffperf-history): the report shows trends"
    )
    parser.add_argument(
        "--artifacts",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder with the shards' consistency images (their --diffperf-artifacts, downloaded); repeatable",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for flag in ("hardware", "cases", "suites"):
        if getattr(args, flag) and not args.expect_all:
            raise DiffperfError("only applies with --expect-all", source="--" + flag)
    reads = [(Path(f), "FILE") for f in args.files]
    inputs = ((args.expect_all, "--expect-all"), (args.cases, "--cases"), (args.history, "--history"))
    reads += [(Path(p), flag) for p, flag in inputs if p]
    reads += [(Path(d), "--artifacts") for d in args.artifacts]
    for path, flag in ((args.output, "-o"), (args.markdown, "--markdown"), (args.html, "--html")):
        if path:
            check_writable(Path(path), flag, reads)
    summary = step_summary_path()
    if summary is not None:
        check_writable(summary, STEP_SUMMARY_ENV, reads)
    if args.html:
        from ..results.html import require_matplotlib

        require_matplotlib("--html")
    merged = merge([(Path(f), read_results(Path(f))) for f in args.files])
    absent: list[str] = []
    steps: dict[str, dict[int, float]] = {}  # the baseline's steps per scenario, for the report's step charts
    if args.expect_all:
        suite = load_scenario_set(args.expect_all, args.hardware, args.cases, args.suites, CLI_FLAGS)
        steps = {sid: dict(b.steps) for sid, b in suite.baselines.scenarios.items()}
        absent = missing(merged, suite.ids)
    results = results_of(merged)
    counts = outcome_counts(results)
    print(f"diffperf merge: {len(args.files)} file(s), {counts}")
    run = RunContext.of(merged, args.output)
    for line in format_table(summary_table(results, REASON_WIDTH), right_from=None):
        print(line)
    for line in wrapped(details(results, run), shutil.get_terminal_size().columns):
        print(line)
    if absent:
        print(f"{len(absent)} scenario(s) of {args.expect_all} ran in no shard: {', '.join(absent)}")
    empty = nothing_judged(results)
    if empty:
        why = f"every scenario skipped ({skipped_line(results)})" if results else "no scenario in the files"
        allowed = " (allowed: --allow-empty)" if args.allow_empty else "; pass --allow-empty if that is expected"
        print(f"diffperf merge: nothing was judged: {why}{allowed}")
    if args.output:
        _write(Path(args.output), json.dumps(merged, indent=2) + "\n", "-o")
        print(f"wrote {args.output}")
    notes = [f"merged from {len(args.files)} file(s)"]
    if absent:
        notes.append(f"{len(absent)} scenario(s) ran in no shard: {', '.join(absent)}")
    if empty:
        notes.append("nothing was judged: every scenario skipped")
    md = markdown(results, merged, merged.get("provenance"), notes, run=run)
    if args.markdown:
        _write(Path(args.markdown), md, "--markdown")
    append_step_summary(md)
    if args.html:
        write_html(Path(args.html), results, merged, args, notes, steps)
        print(f"wrote {args.html}")
    if absent or failing(merged, results):
        return 1
    return EMPTY_EXIT if empty and not args.allow_empty else 0


def _write(path: Path, text: str, flag: str) -> None:
    """``text`` into ``path``, whole or not at all; DiffperfError naming the option if it cannot be written."""
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise DiffperfError(f"cannot write {path}: {exc.strerror or exc}", source=flag) from None


def write_html(
    path: Path,
    results: list[ScenarioResult],
    merged: dict[str, Any],
    args: argparse.Namespace,
    notes: list[str],
    steps: dict[str, dict[int, float]],
) -> None:
    from ..results import history
    from ..results.html import render

    runs = history.read(Path(args.history)) if args.history else []
    header = {k: v for k, v in merged.items() if k not in ("rows", "scenarios", "servers", "provenance", "version")}
    text = render(
        results,
        header,
        merged.get("provenance"),
        history=history.series(runs) if len(runs) > 1 else (),
        image_dirs=[Path(d) for d in args.artifacts],
        baseline_steps=steps,
        notes=notes,
        run=RunContext.of(merged, args.output),
    )
    _write(path, text, "--html")
