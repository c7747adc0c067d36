"""`diffperf` run in this process (what a subprocess would print and return, without its start-up)."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

from pytest_diffperf.cli import main


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


def diffperf(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Result:
    """``diffperf ARGS`` in-process; ``env`` replaces the environment and ``cwd`` the working directory for
    the call, as a subprocess's would."""
    out, err = io.StringIO(), io.StringIO()
    environ = mock.patch.dict(os.environ, env, clear=True) if env is not None else contextlib.nullcontext()
    before = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with environ, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(before)
    return Result(code, out.getvalue(), err.getvalue())
