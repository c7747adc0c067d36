"""`diffperf calibrate`: a runner class's noise file (--diffperf-noise) from an A/A run and a history of static runs."""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from .._util.atomicfile import dumps_json, write_atomic
from .._util.outputs import check_writable
from ..errors import DiffperfError
from ..results.calibration import Calibrated, calibrate, provenance_of
from ..verdicts.priors import NoisePriors
from .accept import results_paths


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="write a runner class's noise priors (--diffperf-noise FILE) from an A/A run and a history of runs",
        description="Write the noise priors of a runner class from what its runs already produced: an A/A run's "
        "--diffperf-json results (--ab: both sides the same build; each scenario's own between-process and "
        "within-process noise per metric gives the A/B priors) and a history folder of static runs (--history: "
        "pytest --diffperf-history DIR; each scenario's spread between fresh servers of one day, across days and "
        "within a server gives the static priors, the baseline's drift across days included). Each prior is the "
        "largest over the scenarios, rounded up; scenarios measured while the machine was busy are left out. "
        "The figures used and the confidence (process pairs, runs, days, scenarios) are printed and stored in "
        "the file's calibration block. Exit status 2 on a bad input, nothing written.",
    )
    parser.add_argument(
        "--ab",
        action="append",
        default=[],
        metavar="RESULTS",
        help="an A/A run's results file, or a folder of its shards' (repeat for more)",
    )
    parser.add_argument("--history", metavar="DIR", help="a history folder of static runs (pytest --diffperf-history)")
    parser.add_argument(
        "--runner-class",
        metavar="NAME",
        help="the runner class the priors are for (default: the runs' runner label, else their device)",
    )
    parser.add_argument(
        "--include-busy",
        action="store_true",
        help="keep scenarios measured while other processes took the machine (listed in the file)",
    )
    parser.add_argument(
        "--note",
        metavar="TEXT",
        help="how the runs were made (the command, the machine), stored in the file's calibration block",
    )
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the noise file to write (JSON)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ab = results_paths(args.ab)
    folder = Path(args.history) if args.history is not None else None
    output = Path(args.output)
    reads = [(p, "--ab") for p in ab] + ([(folder, "--history")] if folder is not None else [])
    check_writable(output, "--output", reads)
    if args.runner_class is not None and not args.runner_class.strip():
        raise DiffperfError("expected a runner class name, got an empty one", source="--runner-class")
    if args.note is not None and not args.note.strip():
        raise DiffperfError("expected how the runs were made, got an empty note", source="--note")
    hardware, device = provenance_of(ab, folder)
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    runner_class = args.runner_class or device or hardware
    done = calibrate(ab, folder, runner_class, created, hardware, device, args.include_busy, args.note)
    for line in report(done):
        print(line)
    try:
        write_atomic(output, dumps_json(done.priors.model_dump(exclude_none=True)))
    except OSError as exc:
        raise DiffperfError(f"cannot write: {exc.strerror or exc}", source=str(output)) from None
    print(f"diffperf calibrate: wrote {output}; judge with it: pytest ... --diffperf-noise {output}")
    return 0


def report(done: Calibrated) -> list[str]:
    """What the priors came from, each figure as measured and as written, and the notes."""
    priors: NoisePriors = done.priors
    cal = priors.calibration
    assert cal is not None
    lines = [f"diffperf calibrate: runner class {cal.runner_class}"]
    if cal.ab is not None:
        lines.append(
            f"  ab from {', '.join(cal.ab.results)}: {len(cal.ab.scenarios)} scenario(s), at least "
            f"{cal.ab.process_pairs} process pairs each, {cal.ab.request_pairs} request pairs"
        )
        lines.extend(f"    measured beside: {line}" for line in cal.ab.interference)
    if cal.static is not None:
        lines.append(
            f"  static from {cal.static.history}: {len(cal.static.scenarios)} scenario(s), up to {cal.static.runs} "
            f"runs over {cal.static.days} days ({cal.static.first} to {cal.static.last})"
        )
    written = {
        **{f"ab.{k}.{f}": getattr(v, f) for k, v in priors.ab if v is not None for f in ("between", "within")},
        **{
            f"static.{k}.{f}": getattr(v, f)
            for k, v in priors.static
            if v is not None
            for f in ("baseline", "process", "within")
        },
    }
    for key, figure in cal.figures.items():
        value = written.get(key)
        shown = f"{value:g}" if value is not None else "default kept (no noise measured)"
        lines.append(f"  {key:<28} {shown:<8} measured {figure.measured:.4f} ({figure.scenario})")
    lines.extend(f"  note: {note}" for note in done.notes)
    if cal.note is not None:
        lines.append(f"  made: {cal.note}")
    return lines
