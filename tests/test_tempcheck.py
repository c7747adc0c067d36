"""The test suite's temp folder check (``tests/support/tempcheck``, hooked in ``tests/conftest.py``): a test that
leaves a file in the temp folder fails the run, naming it; nothing is left either way (the whole suite passing is the clean case)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from tests.support.paths import REPO

LEAVES = """
import tempfile
from pathlib import Path

def test_leaves_a_folder():
    Path(tempfile.mkdtemp(prefix="diffperf-compare-")).joinpath("out.json").write_text("{}")
"""


@pytest.fixture
def suite_hooks(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # the inner run is a controller of its own
    path = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))  # the subprocess imports this suite's conftest
    pytester.makeconftest("from tests.conftest import pytest_configure, pytest_sessionstart, pytest_unconfigure\n")
    return pytester


def inner_temp_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("pytest-diffperf-tmp-*"))


@pytest.mark.server
def test_a_test_that_leaves_a_folder_in_the_temp_folder_fails_the_run(suite_hooks):
    before = inner_temp_folders()
    suite_hooks.makepyfile(test_leaves=LEAVES)
    result = suite_hooks.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ERROR: the tests left 1 file(s) or folder(s) in the temp folder: diffperf-compare-*"])
    assert inner_temp_folders() == before  # removed all the same
