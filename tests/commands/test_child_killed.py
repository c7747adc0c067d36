"""A long-running command whose child is SIGKILLed mid-way (the OOM killer, a runner reaping a process) ends with one
line and no traceback, and leaves no process, no registered worktree, no half-built venv and no temp folder.

The runs and what they leave are read as in ``test_interrupts.py``; here the signal goes to one descendant.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable

import psutil
import pytest

from tests.commands.test_interrupts import (
    PYTEST_ARGS,
    cmdline,
    left_in_temp,
    needs_server,
    run_env,
    slow_checkout,
    slow_install_repo,
    suite_repo,
)
from tests.support.gitrepo import commit, git, worktrees
from tests.support.paths import REPO, SGLANG_DATA
from tests.support.processes import watched


def kill_a_child(
    command: list[str], cwd: os.PathLike[str], env: dict[str, str], target: Callable[[psutil.Process], bool]
) -> tuple[int, str, list[psutil.Process], str]:
    """Start ``command``, SIGKILL the first descendant ``target`` picks once it has run a second; the command's exit
    code, stderr, every descendant seen and the killed one's command line. Nothing of it is left running."""
    with watched(command, cwd, env) as run:
        victim = run.moment(lambda children: next((c for c in children if target(c)), None))
        killed = cmdline(victim)
        victim.kill()
        code, err = run.end(timeout=180)
        return code, err, list(run.seen.values()), killed


def assert_ended_cleanly(code: int, err: str, seen: list[psutil.Process]) -> None:
    assert code not in (0, -signal.SIGKILL), err
    assert "Traceback" not in err and "INTERNALERROR" not in err, err
    assert err.strip(), "it said nothing"
    _, alive = psutil.wait_procs(seen, timeout=15)
    assert not [cmdline(p) for p in alive]


@needs_server
@pytest.mark.server  # a real pytest run of the plugin, its git checkout
def test_a_git_side_whose_checkout_is_killed_leaves_no_worktree(tmp_path):
    repo = suite_repo(tmp_path)
    slow_checkout(repo)
    commit(repo, "a slow checkout")
    command = ["-m", "pytest", *PYTEST_ARGS, "--diffperf-base=git=HEAD"]

    def checkout(p: psutil.Process) -> bool:  # git worktree add, while its smudge filter sleeps
        return "worktree add" in cmdline(p) and any("sleep 60" in cmdline(c) for c in p.children(recursive=True))

    code, err, seen, killed = kill_a_child(command, repo, run_env(repo), checkout)
    assert "worktree add" in killed
    assert_ended_cleanly(code, err, seen)
    assert "git: cannot check out" in err and "git ended with signal SIGKILL" in err, err
    assert worktrees(repo) == []
    assert "locked" not in git(repo, "worktree", "list", "--porcelain")
    assert left_in_temp(repo) == []


@needs_server
@pytest.mark.server  # a real pytest run of the plugin, its git checkout and pip build
def test_a_git_side_whose_install_is_killed_leaves_no_venv(tmp_path):
    repo, spec = slow_install_repo(tmp_path)
    cache = tmp_path / "cache"
    command = ["-m", "pytest", *PYTEST_ARGS, spec]

    def pip(p: psutil.Process) -> bool:  # pip, once it builds the package
        return "pip install" in cmdline(p) and bool(p.children())

    code, err, seen, killed = kill_a_child(command, repo, run_env(repo), pip)
    assert "pip install" in killed
    assert_ended_cleanly(code, err, seen)
    assert "install: installing" in err and "ended with signal SIGKILL); log: " in err, err
    venvs = cache / "venvs"
    assert not [p.name for p in venvs.iterdir() if p.is_dir()] if venvs.is_dir() else True, "a half-built venv"
    assert left_in_temp(repo) == []


@pytest.mark.server
def test_a_verify_sglang_whose_harness_child_is_killed_is_one_line(tmp_path):
    """SGLang's harness is foreign code run in this process: this copy's ``test_utils.py`` runs a process at import
    and raises when it dies; killed, the command names the file in one line."""
    tree = tmp_path / "src"
    shutil.copytree(SGLANG_DATA / "v0.5.23" / "src" / "sglang", tree / "sglang")
    utils = tree / "sglang" / "multimodal_gen" / "test" / "test_utils.py"
    utils.write_text('import subprocess as _sp\n_sp.run(["sleep", "301"], check=True)\n' + utils.read_text())
    command = ["-m", "pytest_diffperf.cli", "verify-sglang", str(tree), "--openai-as-installed"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    code, err, seen, _ = kill_a_child(command, tmp_path, env, lambda p: cmdline(p) == "sleep 301")
    assert_ended_cleanly(code, err, seen)
    assert len(err.strip().splitlines()) == 1, err
    assert "test_utils.py" in err, err


@needs_server
@pytest.mark.server
def test_a_bisect_whose_step_is_killed_leaves_nothing(tmp_path):
    repo = suite_repo(tmp_path)
    good = git(repo, "rev-list", "--max-parents=0", "HEAD")
    command = ["-m", "pytest_diffperf.cli", "bisect", "--good", good, "--bad", "HEAD", "--json=bisect.json", "--",
               *PYTEST_ARGS, "--diffperf-ab-request-pairs=50", "--diffperf-ab-max-requests=2000",
               "--diffperf-ab-min-process-pairs=3"]  # fmt: skip

    def step(p: psutil.Process) -> bool:  # the step's pytest, once both sides' servers run
        below = [cmdline(c) for c in p.children(recursive=True)]
        return "-m pytest " in cmdline(p) and sum("pytest_diffperf.refserver" in c for c in below) >= 2

    code, err, seen, killed = kill_a_child(command, repo, run_env(repo), step)
    assert "-m pytest" in killed
    assert_ended_cleanly(code, err, seen)
    assert err.startswith("diffperf bisect: error: step step-1: pytest ended with signal SIGKILL without a verdict"), (
        err
    )
    assert worktrees(repo) == []
    assert left_in_temp(repo) == []
