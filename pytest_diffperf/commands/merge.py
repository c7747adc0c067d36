"""`diffperf merge FILE... -o OUT`: one results file and one summary from the shards' results."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .._util.ci import append_step_summary
from .._util.outputs import check_writable
from .._util.text import format_table
from ..errors import DiffperfError
from ..perf.baselines import load_baselines, select_scenarios
from ..results.merge import merge, missing, outcome_counts, read_results, results_of
from ..results.model import FAILING
from ..results.tables import markdown, summary_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "merge",
        help="merge the results files of shards into one, with one summary",
        description="Merge --diffperf-json files (of shards, or of xdist-less separate runs) into one file and "
        "print one summary (also appended as Markdown to $GITHUB_STEP_SUMMARY when set). Exit status 1 "
        "when a scenario failed (performance or consistency) or errored, or when --expect-all finds scenarios that ran in no file.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="results files (results-*.json)")
    parser.add_argument("-o", "--output", help="write the merged results here")
    parser.add_argument("--markdown", help="also write the Markdown summary to this file")
    parser.add_argument("--expect-all", metavar="BASELINE", help="every scenario of this baseline file must have run")
    parser.add_argument("--hardware", help="platform, to pick scenarios (and the file of a folder) for --expect-all")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.hardware and not args.expect_all:
        raise DiffperfError("only applies with --expect-all", source="--hardware")
    if args.output:
        check_writable(Path(args.output), "-o")
    if args.markdown:
        check_writable(Path(args.markdown), "--markdown")
    merged = merge([(Path(f), read_results(Path(f))) for f in args.files])
    absent = []
    if args.expect_all:
        baselines = load_baselines(args.expect_all, args.hardware)
        absent = missing(merged, select_scenarios(baselines, {}, args.hardware))
    results = results_of(merged)
    counts = outcome_counts(results)
    print(f"diffperf merge: {len(args.files)} file(s), {counts}")
    for line in format_table(summary_table(results), right_from=None):
        print(line)
    for result in results:
        if result.outcome in FAILING:
            reason = result.message if result.verdict in FAILING else (result.consistency or {}).get("message", "")
            print(f"{result.outcome.upper()} {result.scenario}: {(reason.strip().splitlines() or ['-'])[0]}")
    if absent:
        print(f"{len(absent)} scenario(s) of {args.expect_all} ran in no shard: {', '.join(absent)}")
    if args.output:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(merged, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.output}")
    md = markdown(summary_table(results), merged) + f"{counts}\n\n"
    if absent:
        md += f"**{len(absent)} scenario(s) ran in no shard:** {', '.join(absent)}\n\n"
    if args.markdown:
        Path(args.markdown).write_text(md, encoding="utf-8")
    append_step_summary(md)
    return 1 if absent or any(r.outcome in FAILING for r in results) else 0
