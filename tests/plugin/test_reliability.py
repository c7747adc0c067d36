"""Issue 26's classes through the real entry point (pytester in-process, ``--co`` or checks made before any
server starts): nothing of the user's is changed or deleted, and each mistake is one clear error."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from pytest_diffperf._util import tempdirs
from tests.support.suite import GENEROUS, tiny_case


def _age(path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old), follow_symlinks=False)


def test_a_run_sweeps_only_its_own_marked_temp_folders(pytester, suite, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(pytester.path / "tmp"))
    (pytester.path / "tmp").mkdir()
    mine = tempdirs.make("diffperf-")
    users = pytester.path / "tmp" / "diffperf-history"  # a user's own folder, as old
    (users / "run-1.json").parent.mkdir()
    (users / "run-1.json").write_text("{}")
    for path in (mine / tempdirs.MARKER, mine, users / "run-1.json", users):
        _age(path, 10 * 24 * 3600)
    result = pytester.runpytest_inprocess(*suite([tiny_case("tiny")], {"tiny": GENEROUS}), "--co", "-q")
    assert result.ret == 0, result.stdout.str()
    assert not mine.exists()
    assert (users / "run-1.json").read_text() == "{}"


def _file_size_limit(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.server
def test_a_full_disk_leaves_the_old_results_file_whole_and_no_traceback(pytester, suite):
    """A real process that can write no more than 300 bytes per file (the dry run writes the results file):
    the old results file is left whole, no temporary file is left, one error line, exit status 1."""
    args = suite([tiny_case("tiny")], {"tiny": GENEROUS})
    old = '{"old": true}\n'
    (pytester.path / "results.json").write_text(old)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--diffperf-dry-run", "-q"],
        cwd=pytester.path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=_file_size_limit(300),
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "results.json: cannot write: File too large" in out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert (pytester.path / "results.json").read_text() == old
    assert [p.name for p in pytester.path.glob(".results.json.*")] == [".results.json.run.lock"]  # no temp file
