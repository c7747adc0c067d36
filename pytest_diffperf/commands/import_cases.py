"""`diffperf import-cases PATH`: SGLang's Python case lists as the equivalent JSON case file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .._util.atomicfile import dumps_json, write_atomic
from .._util.jsonfile import validate
from .._util.outputs import check_writable
from ..cases import CaseFile, unmatched
from ..perf.baselines import load_baselines, select_scenarios
from ..sglang.casefile import case_file_data
from ..sglang.source import locate, names_installed
from ..sglang.task_types import TABLE_ENV, load_table


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "import-cases",
        help="convert SGLang's case lists (gpu_cases.py) into a JSON case file",
        description="Read SGLang's diffusion case lists the way its CI does (the DiffusionTestCase objects after "
        "__post_init__, so the quality pins and default sampling parameters are included) and write the "
        "equivalent JSON case file: the request each case sends and the server command and environment it "
        "starts. Cases the plugin cannot express yet are listed under not_expressible with the reason. "
        "The same conversion runs when --diffperf-cases names the SGLang source directly; this command "
        "writes it out for review or for users who prefer JSON.",
        epilog="PATH: SGLang's gpu_cases.py, an sglang checkout or unpacked wheel holding it, or the word "
        f"'sglang' for the installed package. Models missing from the task-type table: see ${TABLE_ENV}.",
    )
    parser.add_argument("path", metavar="PATH", help="gpu_cases.py, a folder holding it, or 'sglang'")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the case file here (default: stdout)")
    parser.add_argument(
        "--hardware",
        help="platform the lists are read for (its current_platform decides which cases exist; default h100)",
    )
    parser.add_argument(
        "--suite",
        action="append",
        metavar="NAME",
        help="an SGLang CI suite (repeatable; default: the suites SGLang's CI runs on --hardware, read from their "
        "names: N-gpu, N-gpu-PLATFORM, N-npu)",
    )
    parser.add_argument("--task-types", metavar="FILE", type=Path, help=f"extra model task types (as ${TABLE_ENV})")
    parser.add_argument(
        "--baselines",
        metavar="FILE",
        help="a baseline file or perf_baselines/ folder: list its scenarios without a case and the cases without one",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.output:
        reads = [
            (Path(p), flag) for p, flag in ((args.task_types, "--task-types"), (args.baselines, "--baselines")) if p
        ]
        if not names_installed(args.path):
            source = locate(args.path)  # gpu_cases.py, and the files beside it that it reads
            reads += [(source.gpu_cases, "PATH"), (source.server_dir, "PATH")]
        check_writable(Path(args.output), "--output", reads)
    table = load_table(args.task_types)
    data = case_file_data(args.path, args.hardware, args.suite, table=table)
    validate(CaseFile, data, Path(args.path), "")  # the file written reads back as a case file
    text = dumps_json(data)
    if args.output:
        write_atomic(Path(args.output), text)
    else:
        sys.stdout.write(text)
    _summary(args, data)
    return 0


def _summary(args: argparse.Namespace, data: dict[str, Any]) -> None:
    """What was converted, on stderr (stdout may be the case file)."""
    source = data["sglang_source"]
    cases, skipped = data["cases"], data["not_expressible"]
    where = f" to {args.output}" if args.output else ""
    err = sys.stderr
    print(
        f"diffperf import-cases: {len(cases)} case(s) from {source['path']} "
        f"({', '.join(source['suites'])}; {source['hardware']}; loaded with {source['loaded_with']}){where}",
        file=err,
    )
    for warning in source["warnings"]:
        print(f"  warning: {warning}", file=err)
    for note in source["notes"]:
        print(f"  note: {note}", file=err)
    for entry in skipped:
        print(f"  not expressible: {entry['id']}: {entry['reason']}", file=err)
    if args.baselines:
        baselines = load_baselines(args.baselines, source["hardware"])
        ids = [c["id"] for c in cases] + [e["id"] for e in skipped]
        ours = select_scenarios(baselines, {}, source["hardware"])  # as pytest selects them
        no_case, no_scenario = unmatched(ids, ours)
        for name in no_case:
            other = source["other_suites"].get(name)
            what = f"a case of suite {', '.join(other)}, not run here" if other else "scenario without a case"
            print(f"  {what}: {name} ({baselines.source[name]})", file=err)
        for name in no_scenario:
            print(f"  case without a scenario: {name}", file=err)
