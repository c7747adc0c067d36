"""Issue 26's classes through the real entry point (pytester in-process, ``--co`` or checks made before any
server starts): nothing of the user's is changed or deleted, and each mistake is one clear error."""

from __future__ import annotations

import os
import tempfile
import time

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
