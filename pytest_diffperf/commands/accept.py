"""`diffperf accept RESULTS...`: write baselines from the results files of runs that already happened."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._util.keywords import keyword_matcher
from .._util.values import argtype, fraction_below_one
from ..errors import DiffperfError
from ..perf.baselines import load_baselines
from ..regen.accept import SIDES, Inputs, plan, regenerator
from ..regen.policy import POLICIES, RegenSettings
from ..regen.summary import summary_lines
from ..regen.writer import check_loadable, diffs


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "accept",
        help="write baselines from the results files of a run that already happened (a CI run's shards)",
        description="Write the baselines a run measured, from its --diffperf-json results files (one job's, every "
        "shard's of a CI matrix, a folder of them, or diffperf merge's output): no server starts. Each scenario's "
        "entry is built as pytest --regen-baselines builds it (every figure from its median-e2e request), "
        "decided by the same policy and written into the file the scenario came from (a new one: the file its "
        "platform reads), locked and atomic; the change is printed before it is written. Refused, with nothing "
        "written: scenarios that errored, failed their consistency check or were measured in an A/B run "
        "(unless --from), scenarios measured while other processes took the machine (unless --accept-busy, then "
        "named in the file's metadata), results of another platform than the file's (unless --force), results "
        "files older than version 3.",
    )
    parser.add_argument("results", nargs="+", metavar="RESULTS", help="results files, or folders of them (*.json)")
    parser.add_argument(
        "--baselines", metavar="FILE_OR_FOLDER", help="the baseline file or folder (default: the one the run used)"
    )
    parser.add_argument("--policy", choices=POLICIES, default="replace", help="as --regen-policy (default: replace)")
    parser.add_argument(
        "--min-improvement",
        type=argtype(fraction_below_one),
        default="5%",
        help="e2e gain the improve policy needs (0.05 or 5%%; default 5%%)",
    )
    parser.add_argument("-k", dest="keyword", metavar="EXPR", default="", help="only scenarios matching, as pytest -k")
    parser.add_argument("--dry-run", action="store_true", help="print the summary and the diff; write nothing")
    parser.add_argument(
        "--from",
        dest="side",
        choices=SIDES,
        help="of an A/B run's scenarios, accept this side's requests (refused without it)",
    )
    parser.add_argument(
        "--accept-busy",
        action="store_true",
        help="accept scenarios measured while other processes took the machine (named in the file's metadata)",
    )
    parser.add_argument("--force", action="store_true", help="write figures of another platform than the file's")
    parser.add_argument("--description", help="replace the files' metadata.description")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = RegenSettings(args.policy, args.min_improvement, args.dry_run)
    select = keyword_matcher(args.keyword)
    inputs = Inputs.read(results_paths(args.results))
    if args.side and not any(s.get("ab") for s in inputs.merged["scenarios"]):
        raise DiffperfError(
            f"the results hold no A/B run (no base and candidate sides) to take {args.side}'s requests from; "
            "leave --from out",
            source="--from",
        )
    baselines = load_baselines(baseline_path(args.baselines, inputs), inputs.hardware)
    accepted = plan(inputs, baselines, settings, select, args.side, args.accept_busy)
    for line in accepted.refused.values():
        print(f"diffperf accept: refused: {line}", file=sys.stderr)
    if accepted.refused:
        leave_out = " and ".join(f"not {sid}" for sid in accepted.refused)
        raise DiffperfError(
            f"{len(accepted.refused)} scenario(s) refused, nothing written; leave them out with -k '{leave_out}'"
        )
    for line in accepted.busy:
        print(f"diffperf accept: warning: accepted with --accept-busy: {line}")
    for note in accepted.notes:
        print(f"diffperf accept: {note}")
    if not accepted.entries:
        raise DiffperfError(
            f"no scenario of the results to accept{' matches -k ' + repr(args.keyword) if args.keyword else ''}"
        )
    ids = list(accepted.entries)
    preview_settings = RegenSettings(settings.policy, settings.min_improvement, dry_run=True)
    preview = regenerator(inputs, baselines, preview_settings, ids, force=args.force, description=args.description,
                          announce=print, busy=accepted.busy)  # fmt: skip
    for warning in preview.warnings:
        print(f"diffperf accept: warning: {warning}")
    records = [preview.write(sid, entry, regression) for sid, (entry, regression) in accepted.entries.items()]
    check_loadable(records, preview.metadata)  # every file as the next run would load it, before any write
    for text in diffs(records, preview.metadata):  # the change, before it is written
        sys.stdout.write(text)
    if not settings.dry_run:
        writer = regenerator(inputs, baselines, settings, ids, force=args.force, description=args.description,
                             announce=lambda _line: None, busy=accepted.busy)  # fmt: skip
        try:
            records = [writer.write(sid, entry, regression) for sid, (entry, regression) in accepted.entries.items()]
        except OSError as exc:
            raise DiffperfError(f"cannot write: {exc.strerror or exc}", source=str(exc.filename or "")) from None
    print(f"diffperf accept: {len(inputs.docs)} results file(s) of {inputs.run_line()}")
    for line in summary_lines(records, settings):
        print(line)
    return 0


def results_paths(given: list[str]) -> list[Path]:
    """The results files: each given file, and every ``*.json`` of a given folder (a CI download's)."""
    out: list[Path] = []
    for raw in given:
        path = Path(raw)
        if path.is_dir():
            found = sorted(path.rglob("*.json"))
            if not found:
                raise DiffperfError("no results files (*.json) in this folder", source=raw)
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise DiffperfError("file not found", source=raw)
    return out


def baseline_path(given: str | None, inputs: Inputs) -> Path:
    """``--baselines``, else the first baseline file the run recorded, when it is here."""
    if given is not None:
        return Path(given)
    raw = inputs.merged.get("baselines")
    recorded = [Path(p) for p in raw if isinstance(p, str) and p] if isinstance(raw, list) else []
    here = Path.cwd().resolve()
    if recorded and recorded[0].is_file() and recorded[0].resolve().is_relative_to(here):
        return recorded[0]
    if recorded and recorded[0].is_file():  # a path of the machine that ran: never written without being named
        where = f"the run's {recorded[0]} is outside this folder"
    else:
        where = f"the run's {recorded[0]} is not here" if recorded else "the results do not name one"
    raise DiffperfError(f"which baseline file? {where}: pass --baselines FILE_OR_FOLDER", source="--baselines")
