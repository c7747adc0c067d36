"""`diffperf compare --cases CASES.json`: the serving comparison; `--report FILE.jsonl`: a journal's trend."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._util import tempdirs
from .._util.atomicfile import write_atomic
from .._util.outputs import check_folder, check_writable
from .._util.text import format_table
from .._util.values import argtype, count, seconds
from ..cases import load_case_file
from ..compare import journal
from ..compare.engine import Run, comparison_document, plan_runs, run_all
from ..errors import DiffperfError
from ..serving import preview
from ..serving.pool import ServerPlan, ServerPool
from ..serving.process import ServerPorts

DRY_RUN_PORTS = ServerPorts(30000, 30002, 30003)  # shown by the dry run (a run takes free ones)
RESULTS_FILE, LOGS_FOLDER = "comparison-results.json", "comparison-logs"
OUTPUT_PREFIX = "diffperf-compare-"  # the default output: <temp>/diffperf-compare-<random>/, swept after 3 days


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="run every case on every framework and report median latencies",
        description="For each case x framework: start the server, send one warmup and N measured requests, "
        "and record the client-side latencies with the server's own perf records. Exit status 1 when any "
        "case had an error (all cases still run), 2 on a bad file or argument.",
    )
    parser.add_argument(
        "--cases",
        "--config",
        dest="config",
        type=Path,
        metavar="CASES.json",
        help="the case file (SGLang's comparison_configs.json or a superset), as pytest's --diffperf-cases; "
        "--config is the old name",
    )
    parser.add_argument("--case-ids", nargs="+", metavar="ID", help="run only these cases")
    parser.add_argument(
        "--server",
        "--frameworks",
        dest="frameworks",
        nargs="+",
        metavar="NAME",
        help="run these launchers, as pytest's --diffperf-server (default: those each case lists); "
        "--frameworks is the old name",
    )
    parser.add_argument(
        "--measurement-repeats",
        type=argtype(count),
        metavar="N",
        help="measured requests per case (default: the file's measurement_repeats)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="DIR",
        help=f"output folder: {RESULTS_FILE} and {LOGS_FOLDER}/ go there; a path ending in .json is the results "
        f"file, with {LOGS_FOLDER}/ beside it (default: a new folder {OUTPUT_PREFIX}* in the temp folder)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the server commands and requests; start nothing")
    parser.add_argument(
        "--journal",
        type=Path,
        metavar="FILE.jsonl",
        help="append the results to this comparison journal, one line per run (not a --diffperf-history folder); "
        "--history is the old name, deprecated",
    )
    parser.add_argument("--history", type=Path, dest="old_journal", help=argparse.SUPPRESS)  # --journal's old name
    parser.add_argument(
        "--report", type=Path, metavar="FILE.jsonl", help="print each case's trend in this comparison journal"
    )
    parser.add_argument(
        "--log-dir", type=Path, help=f"server logs go in a new folder here (default: {LOGS_FOLDER}/ of the output)"
    )
    parser.add_argument(
        "--startup-timeout",
        type=argtype(seconds),
        default=1200.0,
        metavar="S",
        help="seconds for a server to become ready (default: %(default)g)",
    )
    parser.add_argument(
        "--request-timeout",
        type=argtype(seconds),
        default=600.0,
        metavar="S",
        help="seconds per request when a case sets no timeout_s (default: %(default)g)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.old_journal is not None:
        if args.journal is not None:
            raise DiffperfError("the old name of --journal: give --journal alone", source="--history")
        _warn("diffperf compare: --history is deprecated: use --journal (the comparison journal, a JSONL file)")
        args.journal = args.old_journal
    if args.config is None and args.report is None:
        raise DiffperfError("give --cases CASES.json to run, or --report FILE.jsonl to print a trend")
    code = 0
    if args.config is not None:
        if args.journal is not None and args.journal.exists():
            journal.read(args.journal)  # a damaged journal fails now, not after the run
        if args.report is not None and args.report != args.journal:
            journal.read(args.report)
        code = _compare(args)
    if args.report is not None:
        print_report(args.report)
    return code


def _compare(args: argparse.Namespace) -> int:
    case_file = load_case_file(args.config)
    runs, left_out = plan_runs(case_file, args.config, args.case_ids, args.frameworks)
    repeats = args.measurement_repeats or case_file.measurement_repeats
    for note in left_out:
        print(f"not run: {note}")
    if args.dry_run:
        print_dry_run(runs, repeats, _output_paths(args, Path(f"<temp>/{OUTPUT_PREFIX}*"))[1])
        return 0
    made: Path | None = None  # the default output folder, made here: removed again if the run stops before it starts
    if args.output is None:
        tempdirs.sweep(OUTPUT_PREFIX)
        made = tempdirs.make(OUTPUT_PREFIX)
    output, log_root = _output_paths(args, made or args.output)
    reads = [(args.config, "--cases"), *([(args.journal, "--journal")] if args.journal else [])]
    try:
        check_writable(output, "--output", reads)
        check_folder(log_root, "--log-dir" if args.log_dir else "--output", reads)
        if args.journal is not None:
            check_writable(args.journal, "--journal", reads[:1])
    except DiffperfError:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise
    started = datetime.now(timezone.utc)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        log_root.mkdir(parents=True, exist_ok=True)
        log_dir = Path(tempfile.mkdtemp(prefix=started.strftime("%Y%m%dT%H%M%SZ-"), dir=log_root)).resolve()
    except OSError as exc:
        raise DiffperfError(f"cannot create: {exc.strerror}", source=str(exc.filename or log_root)) from None
    print(f"{len(runs)} run(s) of 1 warmup + {repeats} measured request(s); server logs in {log_dir}", flush=True)
    pool = ServerPool(log_dir, args.startup_timeout, _say)
    results = run_all(runs, pool, repeats, args.request_timeout, _say, _warn)
    doc = comparison_document(results, repeats, started)
    print("\n" + results_table(results))
    try:
        write_atomic(output, json.dumps(doc, indent=2) + "\n")
    except OSError as exc:
        raise DiffperfError(f"cannot write: {exc.strerror}", source=str(output)) from None
    print(f"\nresults written to {output}")
    if args.journal is not None:
        journal.append(args.journal, doc)
        print(f"appended to the journal {args.journal}")
    failed = [r for r in results if r["error"]]
    if failed:
        print(f"\n{len(failed)} case(s) had errors:")
        for r in failed:
            print(f"  {r['case_id']} ({r['framework']}): {r['error']}")
        return 1
    return 0


def _output_paths(args: argparse.Namespace, default: Path) -> tuple[Path, Path]:
    """The results file and the logs folder: under ``--output`` (a folder, or ending in .json the results file),
    else under ``default``; ``--log-dir`` wins for the logs."""
    output = args.output or default
    results, logs = (
        (output, output.parent / LOGS_FOLDER)
        if output.suffix == ".json"
        else (output / RESULTS_FILE, output / LOGS_FOLDER)
    )
    return results, args.log_dir or logs


def _say(message: str) -> None:
    print(message, flush=True)


def _warn(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def print_dry_run(runs: list[Run], repeats: int, log_dir: Path) -> None:
    """Each run's server command (the pool's, ``server_command``), environment and request; nothing is started."""
    ports = DRY_RUN_PORTS
    print(f"dry run: {len(runs)} run(s) of 1 warmup + {repeats} measured request(s); nothing is started")
    print(
        f"(each server gets free ports; shown: {ports.http} for HTTP, and {ports.scheduler} and {ports.master} for "
        f"SGLang's scheduler and master; logs go in a new folder under {log_dir})"
    )
    pool = ServerPool(log_dir / "<run>", startup_timeout=0.0)  # plans only: the same command and env as a run's
    previous, servers = None, 0
    for run in runs:
        server: ServerPlan | str = "above"
        if run.spec != previous:
            servers += 1
            server = pool.plan(run.spec, servers, ports)
        title = f"\n{run.label}: {run.case.model}, {run.case.task}"
        print("\n".join(preview.block(title, server, run.launcher.preview(run.case))))
        previous = run.spec


def results_table(results: list[dict[str, Any]]) -> str:
    rows = [("case", "framework", "latency s", "n", "server s", "denoise step ms", "missing records")]
    for r in results:
        latency = "ERROR" if r["error"] else f"{r['latency_s']:.3f}"
        rows.append(
            (
                r["case_id"],
                r["framework"],
                latency,
                str(len(r["latency_samples_s"])),
                _num(r["server_latency_s"]),
                _num(r["median_denoise_step_ms"], 1),
                str(r["missing_perf_records"]),
            )
        )
    return "\n".join(format_table(rows))


def print_report(path: Path) -> None:
    """Each case's last latency in a journal against the median of its earlier runs."""
    runs = journal.read(path)
    trends = journal.trends(runs)
    print(f"\ntrend in {path}: {len(runs)} run(s); last latency vs median of the earlier measured runs")
    rows = [("case", "framework", "runs", "last s", "median before s", "change", "last commit")]
    for t in trends:
        last = "ERROR" if t.last.error or t.last.latency_s is None else f"{t.last.latency_s:.3f}"
        change = "-" if t.change is None else f"{t.change:+.1%}"
        rows.append((t.case_id, t.framework, str(t.runs), last, _num(t.baseline_s), change, t.commit_sha[:12]))
    print("\n".join(format_table(rows)))
    for t in trends:
        if t.last.error:
            print(f"  {t.case_id} ({t.framework}) last run: {t.last.error}")


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
