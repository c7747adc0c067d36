"""`diffperf` console script: one subcommand per module, each exposing ``register(subparsers)``.

A subcommand's module is its name with ``-`` as ``_``. Its ``register`` adds its parser and sets
``func`` (taking the parsed args, returning the exit code). A subcommand's options may come
before, between or after its positionals (``diffperf show DIR --hardware h100 SCENARIO``: argparse's
intermixed parsing). User errors (``DiffperfError``) print one line on stderr and exit 2; a closed
output pipe (``diffperf show ... | head``) ends the command quietly; Ctrl-C and SIGTERM end it after its
cleanup with one line (exit 130 and 143).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from types import FrameType

from . import __version__
from .errors import DiffperfError
from .platforms import canonical_platform

SUBCOMMANDS: tuple[str, ...] = (
    "lint",
    "show",
    "plan",
    "merge",
    "accept",
    "trend",
    "calibrate",
    "compare",
    "import-cases",
    "verify-sglang",
    "bisect",
)
DESCRIPTION = (
    "Tools around pytest-diffperf's performance baselines and results: check and inspect baseline and case "
    "files, split a suite into CI shards and merge their results, write baselines from a run's results, follow a history of runs, calibrate a runner class's noise, convert SGLang's "
    "case lists, run the cross-framework serving comparison, and bisect to the commit that regressed. The checks themselves run in pytest: "
    "pytest --diffperf=PROFILE."
)
EPILOG = "Options may go anywhere after the subcommand. diffperf SUBCOMMAND --help shows each one's options."


def build_parser() -> argparse.ArgumentParser:
    return _parsers()[0]


def _parsers(
    names: tuple[str, ...] = SUBCOMMANDS,
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The ``diffperf`` parser with the subcommands ``names`` (their modules imported), and theirs by name."""
    parser = argparse.ArgumentParser(prog="diffperf", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s (pytest-diffperf) {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for name in names:
        importlib.import_module(f"pytest_diffperf.commands.{name.replace('-', '_')}").register(sub)
    return parser, dict(sub.choices)


def parse(argv: list[str]) -> argparse.Namespace:
    """The subcommand's arguments, options and positionals in any order; what follows ``--`` is the
    subcommand's ``passthrough`` (``diffperf bisect ... -- PYTEST-ARGS``), for those that take one. Only the
    named subcommand's module is imported and its parser built."""
    if not argv or argv[0] not in SUBCOMMANDS:
        return _parsers()[0].parse_args(argv)  # --help, --version, or argparse's error (it exits)
    own, rest = (argv[1:], None) if "--" not in argv else (argv[1 : argv.index("--")], argv[argv.index("--") + 1 :])
    command = _parsers((argv[0],))[1][argv[0]]
    args = command.parse_intermixed_args(own)
    if rest is not None:
        if not hasattr(args, "passthrough"):
            command.error(f"takes no arguments after '--' (got {' '.join(rest) or 'none'})")
        args.passthrough = rest
    args.command = argv[0]
    return args


class Terminated(KeyboardInterrupt):
    """SIGTERM (a cancelled CI job), raised as an interrupt: every ``finally`` and child cleanup runs as on Ctrl-C."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated


def _type_arguments(args: argparse.Namespace) -> None:
    """The arguments the commands take typed, parsed once here (not as argparse types: a bad one is the commands'
    one error line, exit 2): ``--hardware`` as its :data:`~.platforms.Platform`."""
    if isinstance(getattr(args, "hardware", None), str):
        args.hardware = canonical_platform(args.hardware)


def main(argv: list[str] | None = None) -> int:
    args = parse(list(sys.argv[1:] if argv is None else argv))
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if in_main else None
    if in_main and previous == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        _type_arguments(args)
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except DiffperfError as exc:
        print(f"diffperf {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # the command's own cleanup (finally blocks, children stopped) has run
        how = ("terminated (SIGTERM)", 143) if isinstance(exc, Terminated) else ("interrupted (Ctrl-C)", 130)
        print(f"diffperf {args.command}: {how[0]}; stopped, nothing left running", file=sys.stderr)
        return how[1]
    except BrokenPipeError:
        # The reader went away (``| head``): send what is still buffered nowhere, as Python's docs advise.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        if in_main and signal.getsignal(signal.SIGTERM) == _terminate:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
