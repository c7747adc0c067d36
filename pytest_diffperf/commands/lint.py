"""`diffperf lint FILE...`: check baseline and threshold files; exit 1 on errors."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from ..perf.lint import lint_paths


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="check baseline and consistency-threshold files",
        description="Check perf-baseline and consistency-threshold files (recognised by shape). "
        "Exit status 1 when there are errors (or warnings, with --strict).",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="a file, or a folder of them")
    parser.add_argument("--hardware", help="in a folder, lint only the files this platform loads")
    parser.add_argument("--strict", action="store_true", help="warnings fail too")
    parser.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    findings = lint_paths(args.files, args.hardware)
    if args.json:
        print(json.dumps([f.to_dict() for f in findings], indent=2))
    else:
        for finding in findings:
            print(finding)
        counts = Counter(f.severity for f in findings)
        print(f"{counts['error']} error(s), {counts['warning']} warning(s)")
    failing = {"error", "warning"} if args.strict else {"error"}
    return 1 if any(f.severity in failing for f in findings) else 0
