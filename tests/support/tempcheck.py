"""The test suite's own temp folder: ``$TMPDIR`` of every test process (xdist workers, pytester subprocesses,
servers), made at the start and checked empty at the end, so that a test that leaves a file or folder in the temp
folder fails the run instead of filling a developer's ``/tmp``. pytest's own ``tmp_path`` folders stay where they
were (``PYTEST_DEBUG_TEMPROOT``), kept for the last three runs as usual."""

from __future__ import annotations

import getpass
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "pytest-diffperf-tmp-"
TEMPROOT = "PYTEST_DEBUG_TEMPROOT"


def redirect() -> Path:
    """A fresh temp folder for this session's processes (set in ``$TMPDIR``, which they inherit)."""
    real = tempfile.gettempdir()
    os.environ.setdefault(TEMPROOT, real)
    private = Path(tempfile.mkdtemp(prefix=PREFIX, dir=real))
    os.environ["TMPDIR"] = str(private)
    tempfile.tempdir = None  # read $TMPDIR again
    return private


def finish(private: Path) -> list[str]:
    """What the session left in its temp folder (names, sorted), but torch's compile cache, which importing
    diffusers makes there (``torchinductor_USER``); the folder is removed either way."""
    torch_cache = f"torchinductor_{getpass.getuser()}"
    try:
        left = sorted(p.name for p in private.iterdir() if p.name != torch_cache)
    except FileNotFoundError:
        return ["(the temp folder itself was removed)"]
    shutil.rmtree(private, ignore_errors=True)
    return left
