"""The one-line PR job: A/B against ``git=origin/main`` in a throwaway repository whose newer commit is slower."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from pathlib import Path

import psutil
import pytest

from tests.support.gitrepo import commit, git, init, inject_delay, with_plugin, worktrees
from tests.support.signals import python_with_default_signals
from tests.support.suite import GENEROUS, interrupt_when_serving, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes


@pytest.fixture
def pr_repo(pytester, suite, monkeypatch):
    """The folder the tests run from: a repository of the plugin (its copy) whose HEAD sleeps 150 ms in the
    denoising stage and whose ``origin/main`` does not; the checkout's copy is what ``current`` serves."""
    args = suite([tiny_case("tiny", perf_warmup_requests=1)], {"tiny": GENEROUS})
    repo = with_plugin(init(pytester.path))
    main = commit(repo, "main")
    git(repo, "update-ref", "refs/remotes/origin/main", main)
    inject_delay(repo, "DenoisingStage", 150)
    head = commit(repo, "a slower denoising stage")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))
    return args, main, head


def test_a_pull_request_against_origin_main_is_regressed(pytester, pr_repo):
    args, main, head = pr_repo
    result = pytester.runpytest(*args, "--diffperf-base=git=origin/main", "--diffperf-ab-tolerance=10%")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "PERFORMANCE: regressed: " in out and "(A/B against the base: git=origin/main)" in out, out
    doc = results(pytester)
    assert (doc["base"], doc["base_commit"], doc["candidate_commit"]) == ("git=origin/main", main, head)
    record = doc["scenarios"][0]["ab"]
    assert record["verdict"] == "regressed" and record["attribution"]["named"][0] == "DenoisingStage"
    assert worktrees(pytester.path) == [] and not refservers()


def command_line(proc: psutil.Process) -> str:
    """A process's command line ('' once it has ended: a zombie has none)."""
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def test_an_interrupted_run_removes_its_worktree(pytester, pr_repo):
    args, _, _ = pr_repo
    hang = "--diffperf-base=git=origin/main; args=--inject-hang-on-request 1"
    before = set(Path(tempfile.gettempdir()).glob("diffperf-git-*"))
    command = python_with_default_signals("-m", "pytest", *args, hang)
    proc = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.DEVNULL)
    interrupt_when_serving(
        proc, lambda run: [p for p in run if "--inject-hang-on-request" in command_line(p)], signal.SIGTERM, 120
    )
    assert worktrees(pytester.path) == []
    assert not set(Path(tempfile.gettempdir()).glob("diffperf-git-*")) - before
