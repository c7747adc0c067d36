"""`diffperf lint FILE...`: check baseline, threshold and case files, recognised by their shape."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

from .._util.findings import Finding, read_for_lint
from ..cases import Case, is_case_document, lint_case_doc, load_case_file
from ..consistency.thresholds import is_threshold_document, lint_threshold_doc, load_thresholds, threshold_files
from ..errors import DiffperfError
from ..perf.baselines import baseline_files, load_baselines
from ..perf.lint import lint_baseline_doc, lint_baselines
from ..platforms import PLATFORMS, Platform
from ..regen.unused import Unused, prune, unused_entries
from ..sglang.caselist import NoLists
from ..sglang.source import is_sglang_source

T = TypeVar("T")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    parser.add_argument(
        "--cases",
        metavar="FILE",
        help="the case file (JSON, or SGLang's gpu_cases.py read as on --hardware): report the baseline scenarios, "
        "thresholds entries and ground-truth files no case uses (default: the case files among FILE)",
    )
    parser.add_argument("--gt-dir", metavar="DIR", help="the ground-truth folder, for its files no case uses")
    parser.add_argument(
        "--prune", action="store_true", help="remove what no case uses (the diff printed; atomic, locked writes)"
    )
    parser.add_argument("--dry-run", action="store_true", help="with --prune: print the diff, change nothing")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if (args.prune or args.dry_run or args.gt_dir) and not (args.cases or _case_files(args.files)):
        option = "--prune" if args.prune else "--dry-run" if args.dry_run else "--gt-dir"
        raise DiffperfError("needs the cases to know what is unused: pass --cases FILE", source=option)
    if args.dry_run and not args.prune:
        raise DiffperfError("only applies with --prune", source="--dry-run")
    gt_dir = _gt_dir(args.gt_dir)
    findings = lint_paths(args.files, args.hardware)
    cases = args.cases or _case_files(args.files)
    broken = _broken_case_files(args.cases, findings)
    findings += broken
    note = None
    if broken or any(f.severity == "error" and Path(f.file) in _as_paths(cases) for f in findings):
        if args.prune:
            listed = "; ".join(f"{f.file}: {f.key}: {f.message}" for f in findings if f.severity == "error")
            raise DiffperfError(f"nothing pruned: the case file has errors: {listed}", source="--prune")
        note = "unused entries not looked for: the case file has errors"
        cases = []
    if cases:
        unused = find_unused(args.files, args.hardware, cases, gt_dir)
        if args.prune:
            _check_prunable(findings + _unreadable(args.files), cases, args.hardware)
            changed = prune(
                unused, dry_run=args.dry_run, show=lambda text: print(text, end="" if text.endswith("\n") else "\n")
            )
            print(
                f"pruned {len(unused)} unused entr{'y' if len(unused) == 1 else 'ies'}"
                + (" (dry run, nothing changed)" if args.dry_run else f" ({len(changed)} file(s) changed)")
            )
            unused = unused if args.dry_run else []
        findings += [Finding("warning", str(u.file), u.name, "", u.message()) for u in unused]
    if args.json:
        print(json.dumps([f.to_dict() for f in findings], indent=2))
    else:
        for finding in findings:
            print(finding)
        if note:
            print(note)
        counts = Counter(f.severity for f in findings)
        print(f"{counts['error']} error(s), {counts['warning']} warning(s)")
    failing = {"error", "warning"} if args.strict else {"error"}
    return 1 if any(f.severity in failing for f in findings) else 0


def _gt_dir(given: str | None) -> Path | None:
    """``--gt-dir``: an existing folder."""
    if given is None:
        return None
    path = Path(given)
    if not path.is_dir():
        what = "is not a folder" if path.exists() else "not found"
        raise DiffperfError(f"{given}: {what}; expected the ground-truth folder", source="--gt-dir")
    return path


def _check_prunable(findings: list[Finding], cases: str | Path | list[Path], hardware: Platform | None) -> None:
    """--prune deletes nothing on a broken input: any error among the linted files (a case file that does not
    parse would count its cases as absent), or cases that define none (every entry would be unused)."""
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        raise DiffperfError(
            f"{len(errors)} error(s) in the linted files, the first: {errors[0]}; fix them first (--prune removes "
            "nothing while an input is broken)",
            source="--prune",
        )
    for f in cases if isinstance(cases, list) else [Path(cases)]:
        loaded = load_case_file(f, hardware)
        if not loaded.cases and not loaded.not_expressible:
            raise DiffperfError(
                "defines no case: every entry would be unused; --prune removes nothing against it", source=str(f)
            )


def lint_paths(paths: Iterable[str | Path], hardware: Platform | None = None) -> list[Finding]:
    """Lint files and folders (a folder: every file of both kinds, or the ones ``hardware`` reads)."""
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
            if found[0] and _is_thresholds(found[0][0]):  # consistency_thresholds/h100.json is named like a baseline
                found[0] = []
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


def _is_thresholds(path: Path) -> bool:
    data, _ = read_for_lint(path)
    return data is not None and is_threshold_document(data)


def _as_paths(cases: str | list[Path]) -> list[Path]:
    return cases if isinstance(cases, list) else [Path(cases)]


def _broken_case_files(cases: str | None, findings: list[Finding]) -> list[Finding]:
    """Every problem of a ``--cases`` JSON file not linted already (not just the first, as loading it says), when it
    has an error: the unused entries are not looked for then."""
    path = Path(cases) if cases else None
    if path is None or not path.is_file() or is_sglang_source(path) or any(Path(f.file) == path for f in findings):
        return []
    data, out = read_for_lint(path)
    if data is not None and is_case_document(data):
        out += lint_case_doc(path, data)
    return out if any(f.severity == "error" for f in out) else []


def _case_files(paths: Iterable[str | Path]) -> list[Path]:
    """The JSON case files among the linted paths (a folder's too)."""
    found = []
    for f in _json_files(paths):
        data, _ = read_for_lint(f)
        if data is not None and "scenarios" not in data and is_case_document(data):
            found.append(f)
    return found


def _unreadable(paths: Iterable[str | Path]) -> list[Finding]:
    """The syntax errors of the JSON files among the linted paths: a case file among them that does not parse."""
    return [x for f in _json_files(paths) for x in read_for_lint(f)[1] if x.severity == "error"]


def _json_files(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for path in map(Path, paths):
        out += sorted(path.rglob("*.json")) if path.is_dir() else [path] if path.is_file() else []
    return out


def find_unused(
    paths: Iterable[str | Path], hardware: Platform | None, cases: str | Path | list[Path], gt_dir: Path | None
) -> list[Unused]:
    """The baseline scenarios, thresholds entries and ground-truth files of ``paths`` (and ``gt_dir``) that no case
    of ``cases`` uses. SGLang's case lists count the cases of every platform (its h100 thresholds file is the
    base every platform merges: a B200 case's entry there is used on B200)."""
    by_id: dict[str, Case] = {}
    known: set[str] = set()
    for f in cases if isinstance(cases, list) else [Path(cases)]:
        case_file = load_case_file(f, hardware)
        by_id.update({c.id: c for c in case_file.cases})
        known |= {e.id for e in case_file.not_expressible}
        for platform in PLATFORMS if is_sglang_source(f) else ():
            try:
                other = load_case_file(f, platform)
            except NoLists:
                continue
            known |= {c.id for c in other.cases} | {e.id for e in other.not_expressible}
    out = unused_entries(by_id, known, gt_dir=gt_dir, hardware=hardware)
    for path in map(Path, paths):
        baselines = _load(load_baselines, path, hardware)
        thresholds = _load(load_thresholds, path, hardware)
        out += unused_entries(by_id, known, baselines=baselines, hardware=hardware, thresholds=thresholds)
    return list(dict.fromkeys(out))


def _load(load: Callable[[Path, Platform | None], T], path: Path, hardware: Platform | None) -> T | None:
    """What ``load`` reads at ``path`` (None when there is none of its kind)."""
    try:
        return load(path, hardware)
    except DiffperfError:
        return None


def _try(resolve: Callable[[Path, Platform], list[Path]], path: Path, hardware: Platform) -> list[Path]:
    try:
        return resolve(path, hardware)
    except DiffperfError:
        return []
