"""`diffperf` console script: one subcommand per module, each exposing ``register(subparsers)``.

A subcommand's module is its name with ``-`` as ``_``. Its ``register`` adds its parser and sets ``func`` (taking the parsed args, returning
the exit code). User errors (``DiffperfError``) print one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .errors import DiffperfError

SUBCOMMANDS: tuple[str, ...] = ("lint", "show", "plan", "merge", "compare", "import-cases")
DESCRIPTION = (
    "Tools around pytest-diffperf's performance baselines and results: check and inspect baseline files, "
    "split a suite into CI shards and merge their results, convert SGLang's case lists, and run the "
    "cross-framework serving comparison. The checks themselves run in pytest: pytest --diffperf=PROFILE."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diffperf", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"pytest_diffperf.commands.{name.replace('-', '_')}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DiffperfError as exc:
        print(f"diffperf {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
