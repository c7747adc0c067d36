"""`diffperf lint FILE...`: check baseline, threshold and case files, recognised by their shape."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from .._util.findings import Finding, read_for_lint
from ..cases import is_case_document, lint_case_doc
from ..consistency.thresholds import is_threshold_document, lint_threshold_doc, threshold_files
from ..errors import DiffperfError
from ..perf.baselines import baseline_files
from ..perf.lint import lint_baseline_doc, lint_baselines
from ..platforms import canonical_platform


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="check baseline, consistency-threshold and case files",
        description="Check perf-baseline, consistency-threshold and case files (recognised by shape). In a case "
        "file an unknown key is an error (with a did-you-mean): a typo would otherwise be ignored. "
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


def lint_paths(paths: Iterable[str | Path], hardware: str | None = None) -> list[Finding]:
    """Lint files and folders (a folder: every file of both kinds, or the ones ``hardware`` reads)."""
    if hardware is not None:
        canonical_platform(hardware)
    out: list[Finding] = []
    for path in map(Path, paths):
        if path.is_file():
            out += lint_file(path)
        elif not path.is_dir():
            raise DiffperfError("file not found", source=str(path))
        elif hardware is None:
            files = sorted(path.rglob("*.json"))
            if not files:
                raise DiffperfError("no JSON files in this folder (a lint of nothing is no check)", source=str(path))
            for f in files:
                out += lint_file(f, skip_unknown=True)
        else:
            found = [_try(baseline_files, path, hardware), _try(threshold_files, path, hardware)]
            if not any(found):
                raise DiffperfError(f"no baseline or threshold files for platform {hardware!r}", source=str(path))
            out += lint_baselines(path, hardware) if found[0] else []
            out += [x for f in found[1] if f not in found[0] for x in lint_file(f)]  # a baseline named like one
    return out


def lint_file(path: Path, *, skip_unknown: bool = False) -> list[Finding]:
    """Lint one file, recognised by shape (``skip_unknown``: no finding for other JSON files)."""
    data, out = read_for_lint(path)
    if data is None:
        return out
    if is_threshold_document(data):
        return out + lint_threshold_doc(path, data)
    if "scenarios" in data:
        return out + lint_baseline_doc(path, data)
    if is_case_document(data):
        return out + lint_case_doc(path, data)
    if skip_unknown:
        return out
    message = "neither a baseline file (no 'scenarios'), a threshold file (no 'cases' object) nor a case file (no 'cases' list)"
    return [*out, Finding("error", str(path), "", "", message)]


def _try(resolve: Callable[[Path, str], list[Path]], path: Path, hardware: str) -> list[Path]:
    try:
        return resolve(path, hardware)
    except DiffperfError:
        return []
