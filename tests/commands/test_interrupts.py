"""Every long-running command interrupted (SIGTERM, as a cancelled CI job sends, and Ctrl-C's SIGINT) ends with one
line and no traceback, and leaves no process, no registered worktree, no half-built venv and no temp folder.

Each run is a real process (``python -m pytest_diffperf.cli`` / ``python -m pytest``) in a throwaway repository;
the moment to interrupt is found by watching its process tree (a server, a ``git`` checkout, ``pip``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from filelock import FileLock

from pytest_diffperf._util.atomicfile import lock_path
from tests.support.gitrepo import commit, git, init, with_plugin, worktrees
from tests.support.paths import REPO, SGLANG_DATA
from tests.support.processes import watched
from tests.support.signals import python_with_default_signals
from tests.support.suite import GENEROUS, TOLERANCES, tiny_case

needs_server = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("torch", "diffusers")),
    reason="serves the reference server: needs the server extra (not in a plugin-only install)",
)
SIGNALS = [pytest.param(signal.SIGTERM, 143, "terminated (SIGTERM)", id="sigterm"),
           pytest.param(signal.SIGINT, 130, "interrupted (Ctrl-C)", id="sigint")]  # fmt: skip
PYTEST_ARGS = ["--diffperf=pr_test", "--diffperf-baselines=baselines.json", "--diffperf-cases=cases.json",
               "--diffperf-server=reference", "--diffperf-hardware=cpu", "-p", "no:cacheprovider"]  # fmt: skip


def left_in_temp(repo: Path) -> list[str]:
    """What the run left of its own in its temp folder (``run_env``'s TMPDIR)."""
    return sorted(p.name for p in (repo.parent / "tmp").iterdir() if p.name.startswith("diffperf-"))


def suite_repo(root: Path) -> Path:
    """A repository of the plugin's copy with a one-case suite, two commits."""
    repo = with_plugin(init(root / "repo"))
    (repo / "cases.json").write_text(json.dumps({"cases": [tiny_case("tiny", perf_warmup_requests=1)]}))
    baseline = {"metadata": {"hardware": "cpu"}, "tolerances": TOLERANCES,
                "sampling": {"step_fractions": [0.0, 0.5, 1.0]}, "scenarios": {"tiny": GENEROUS}}  # fmt: skip
    (repo / "baselines.json").write_text(json.dumps(baseline))
    commit(repo, "the suite")
    for n in range(2, 5):  # a bisect of these has a step to run
        (repo / "notes.txt").write_text(f"{n}\n")
        commit(repo, f"notes {n}")
    return repo


def slow_install_repo(tmp_path: Path) -> tuple[Path, str]:
    """``suite_repo`` with a package whose build sleeps 120 s, and the base option that installs it (its
    ``cache=`` is ``tmp_path / "cache"``)."""
    repo = suite_repo(tmp_path)
    pkg = repo / "slowpkg"
    pkg.mkdir()
    (pkg / "setup.py").write_text("import time\nfrom setuptools import setup\ntime.sleep(120)\nsetup(name='slowpkg')\n")
    commit(repo, "a package that builds slowly")
    cache = tmp_path / "cache"
    return repo, f"--diffperf-base=git=HEAD:slowpkg; install=--no-build-isolation --no-deps; cache={cache}"


def run_env(repo: Path) -> dict[str, str]:
    """The run's environment: the repository's plugin first, a temp folder of its own (other runs share /tmp)."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    tmp = repo.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    return {**env, "PYTHONPATH": os.pathsep.join([str(repo), env.get("PYTHONPATH", "")]), "HF_HUB_OFFLINE": "1",
            "TMPDIR": str(tmp)}  # fmt: skip


def interrupt_when(
    command: list[str], cwd: Path, env: dict[str, str], found: Callable[[list[psutil.Process]], bool], sig: int
) -> tuple[int, str, list[psutil.Process]]:
    """Start ``command``, send ``sig`` once ``found`` holds for its descendants; its exit code, stderr and every
    descendant seen. Whatever happens, nothing of it is left running."""
    with watched(command, cwd, env) as run:
        run.moment(found)
        run.proc.send_signal(sig)
        code, err = run.end(timeout=120)
        return code, err, list(run.seen.values())


def cmdline(p: psutil.Process) -> str:
    try:
        return " ".join(p.cmdline())
    except psutil.Error:
        return ""


def has_children(p: psutil.Process) -> bool:
    try:
        return bool(p.children())
    except psutil.Error:
        return False


def assert_one_line_and_nothing_left(err: str, line: str, seen: list[psutil.Process]) -> None:
    assert "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == line, err
    _, alive = psutil.wait_procs(seen, timeout=15)
    assert not [cmdline(p) for p in alive]


@needs_server
@pytest.mark.server
@pytest.mark.parametrize(("sig", "code", "said"), SIGNALS)
def test_an_interrupted_bisect_stops_its_step_and_leaves_nothing(tmp_path, sig, code, said):
    repo = suite_repo(tmp_path)
    good = git(repo, "rev-list", "--max-parents=0", "HEAD")
    command = ["-m", "pytest_diffperf.cli", "bisect", "--good", good, "--bad", "HEAD", "--json=bisect.json", "--",
               *PYTEST_ARGS, "--diffperf-ab-request-pairs=50", "--diffperf-ab-max-requests=2000",
               "--diffperf-ab-min-process-pairs=3"]  # fmt: skip

    def serving(run: list[psutil.Process]) -> bool:
        return sum("pytest_diffperf.refserver" in cmdline(p) for p in run) >= 2  # both sides' servers

    exit_code, err, seen = interrupt_when(command, repo, run_env(repo), serving, sig)
    assert exit_code == code, err
    assert_one_line_and_nothing_left(err, f"diffperf bisect: {said}; stopped, nothing left running", seen)
    assert worktrees(repo) == []
    assert left_in_temp(repo) == []


def slow_checkout(repo: Path) -> None:
    """Every checkout of ``repo`` waits 60 s in a smudge filter (``git worktree add`` holds its "initializing"
    lock the while)."""
    (repo / ".gitattributes").write_text("slow.txt filter=slow\n")
    (repo / "slow.txt").write_text("slow\n")
    git(repo, "config", "filter.slow.smudge", "sleep 60; cat")
    git(repo, "config", "filter.slow.clean", "cat")


@needs_server
@pytest.mark.server  # a real pytest run of the plugin, its git checkout
@pytest.mark.parametrize(("sig", "code", "said"), SIGNALS[:1])
def test_a_git_side_interrupted_during_its_checkout_leaves_no_worktree(tmp_path, sig, code, said):
    repo = suite_repo(tmp_path)
    slow_checkout(repo)
    commit(repo, "a slow checkout")
    command = ["-m", "pytest", *PYTEST_ARGS, "--diffperf-base=git=HEAD"]  # HEAD: the commit with the slow file

    def checking_out(run: list[psutil.Process]) -> bool:
        return any("worktree add" in cmdline(p) for p in run) and any("sleep 60" in cmdline(p) for p in run)

    exit_code, err, seen = interrupt_when(command, repo, run_env(repo), checking_out, sig)
    assert exit_code == 2, err  # pytest's code for an interrupted run
    assert "Traceback" not in err
    _, alive = psutil.wait_procs(seen, timeout=15)
    assert not [cmdline(p) for p in alive]
    assert worktrees(repo) == []
    assert git(repo, "worktree", "list", "--porcelain").count("locked") == 0
    assert left_in_temp(repo) == []


@needs_server
@pytest.mark.server  # a real pytest run of the plugin, its git checkout and pip build
def test_a_git_side_interrupted_during_its_install_leaves_no_venv(tmp_path):
    repo, spec = slow_install_repo(tmp_path)
    cache = tmp_path / "cache"
    command = ["-m", "pytest", *PYTEST_ARGS, spec]

    def installing(run: list[psutil.Process]) -> bool:
        return any("pip install" in cmdline(p) and has_children(p) for p in run)  # pip builds the package

    exit_code, err, seen = interrupt_when(command, repo, run_env(repo), installing, signal.SIGTERM)
    assert exit_code == 2, err
    assert "Traceback" not in err
    _, alive = psutil.wait_procs(seen, timeout=15)
    assert not [cmdline(p) for p in alive]
    venvs = cache / "venvs"
    assert not [p.name for p in venvs.iterdir() if p.is_dir()], "a half-built venv is left"
    assert worktrees(repo) == [str(cache / git(repo, "rev-parse", "HEAD"))]  # cache=DIR keeps its checkout
    assert left_in_temp(repo) == []


@pytest.mark.server
@pytest.mark.parametrize(("sig", "code", "said"), SIGNALS)
def test_an_accept_interrupted_while_it_waits_for_the_lock_writes_nothing(tmp_path, sig, code, said):
    baselines = tmp_path / "perf_baselines" / "cpu.json"
    baselines.parent.mkdir()
    baselines.write_bytes((REPO / "data" / "perf_baselines" / "cpu.json").read_bytes())
    before = baselines.read_bytes()
    results = REPO / "tests" / "data" / "results" / "flux_tiny_cpu.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = ["-m", "pytest_diffperf.cli", "accept", str(results), f"--baselines={baselines}"]
    out = tmp_path / "out.txt"
    with FileLock(lock_path(baselines)), out.open("w") as stdout:  # another writer holds the file: accept waits
        proc = subprocess.Popen(python_with_default_signals(*command), cwd=tmp_path, env=env, stdout=stdout,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while f"+++ {baselines}" not in out.read_text() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)  # the diff is printed before the write, which waits for the lock
            assert proc.poll() is None, out.read_text()
            time.sleep(1)
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"diffperf accept: {said}; stopped, nothing left running"
    assert baselines.read_bytes() == before
    assert sorted(p.name for p in baselines.parent.iterdir()) == [".cpu.json.lock", "cpu.json"]


@pytest.mark.server
@pytest.mark.parametrize(("sig", "code", "said"), SIGNALS)
def test_a_verify_sglang_interrupted_in_sglangs_own_code_leaves_nothing(tmp_path, sig, code, said):
    """SGLang's harness is foreign code: this copy's ``test_utils.py`` starts a process and blocks at import."""
    tree = tmp_path / "src"
    shutil.copytree(SGLANG_DATA / "v0.5.23" / "src" / "sglang", tree / "sglang")
    utils = tree / "sglang" / "multimodal_gen" / "test" / "test_utils.py"
    blocking = 'import subprocess as _sp, time as _t\n_sp.Popen(["sleep", "300"])\n_t.sleep(120)\n'
    utils.write_text(blocking + utils.read_text())
    command = ["-m", "pytest_diffperf.cli", "verify-sglang", str(tree), "--openai-as-installed"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def sleeping(children: list[psutil.Process]) -> bool:
        return any(cmdline(c) == "sleep 300" for c in children)

    returncode, err, seen = interrupt_when(command, tmp_path, env, sleeping, sig)
    assert returncode == code, err
    assert_one_line_and_nothing_left(err, f"diffperf verify-sglang: {said}; stopped, nothing left running", seen)
