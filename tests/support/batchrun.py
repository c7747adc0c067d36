"""Many runs of ``pytest`` or ``diffperf`` in one real process, each in its own folder, for the tests whose
process must be a real one for a reason other than its start (one held to the permission bits as root):
one start-up (~2 CPU-s) for the batch instead of one per run.

    python -m tests.support.batchrun RUNS.json OUT.json

``RUNS.json`` lists ``{"id", "entry" ("pytest" or "diffperf"), "args", "cwd"}``; each run is made as the real
process would make it (``pytest.main`` with the plugins it autoloads, the CLI's ``main``), from its ``cwd``,
its stdout and stderr caught; ``OUT.json`` maps each id to ``[exit code, output]``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_diffperf.cli import main as diffperf_main


@dataclass(frozen=True)
class Run:
    """One run of the batch."""

    id: str
    entry: str
    args: list[str]
    cwd: str


def run_one(run: Run) -> tuple[int, str]:
    """The run from its folder: its exit code and what it printed (stdout, then stderr)."""
    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    os.chdir(run.cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = int(pytest.main(run.args) if run.entry == "pytest" else diffperf_main(run.args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(before)
    return code, out.getvalue() + "\n" + err.getvalue()


def main(argv: list[str]) -> int:
    runs = [Run(**item) for item in json.loads(Path(argv[0]).read_text())]
    Path(argv[1]).write_text(json.dumps({run.id: run_one(run) for run in runs}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
