"""The fork server: a forked reference server serves as a started one does, its end and stop signals pass through
its ``serve`` stand-in, a ``serve`` that differs from the fork server runs on its own, and a run's meter counts the
servers forked for it as its own processes."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy
import psutil
import pytest

from pytest_diffperf.protocol import FORKSERVER_ENV, forkserver_in
from pytest_diffperf.refserver.forkserver import PACKAGE, difference, identity, package_digest
from pytest_diffperf.serving.interference import Interference, Meter, RunServers
from tests.support.burners import outside_burners
from tests.support.forks import ForkServer
from tests.support.refserver import SMALL_IMAGE, Server

SERVE = [sys.executable, "-m", "pytest_diffperf.refserver", "serve"]
SERVING = re.compile(r"\[refserver\] serving \S+ at \S+ \(pid (\d+),")


@pytest.fixture(scope="module")
def fork_server():
    forks = ForkServer()
    yield forks
    forks.stop()


@pytest.fixture
def forked(fork_server, start_server, monkeypatch):
    """``forked(model, *args, wait=True)``: a reference server started with the module's fork server named."""
    monkeypatch.setenv(FORKSERVER_ENV, fork_server.address)
    return start_server


def serving_pid(server: Server) -> int:
    deadline = time.monotonic() + 30
    while not (found := SERVING.search(server.output())) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert found, server.output()
    return int(found.group(1))


@pytest.mark.server
def test_a_forked_server_serves_and_ends_as_one_started_on_its_own(forked, fork_server, monkeypatch):
    # read at a server's first operator, after the fork: a forked server takes the kernels its environment names,
    # as test_bundled_ground_truth.py's run on another CPU's kernels needs
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    mine = forked("tiny/flux-t2i")
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # read when torch is imported: the fork server's imports would not do
    own = forked("tiny/flux-t2i")

    assert serving_pid(mine) in {p.pid for p in psutil.Process(fork_server.proc.pid).children()}
    assert serving_pid(mine) != mine.proc.pid
    assert serving_pid(own) == own.proc.pid
    assert re.search(r"\[refserver\] not forked \(its OMP_NUM_THREADS is '3', the fork server's [^)]*\)", own.output())
    assert "not forked" not in mine.output()
    for server in (mine, own):
        assert "[refserver] ready: tiny/flux-t2i (torch CPU kernels: DEFAULT)" in server.output()

    (mine_payload, mine_png), (own_payload, own_png) = mine.image(**SMALL_IMAGE), own.image(**SMALL_IMAGE)
    assert mine_png == own_png
    mine_record, own_record = mine.record(mine_payload["id"]), own.record(own_payload["id"])
    assert [s.name for s in mine_record.stages] == [s.name for s in own_record.stages]

    for server in (mine, own):
        server.proc.send_signal(signal.SIGTERM)
    assert mine.wait_exit(30) == own.wait_exit(30)
    assert not psutil.pid_exists(serving_pid(mine))  # reaped before the fork server told its stand-in


@pytest.mark.server
def test_a_forked_servers_exit_code_is_its_stand_ins(forked):
    failing = forked("tiny/flux-t2i", "--inject-fail-startup", wait=False)
    assert failing.wait_exit(60) == 1
    assert "injected startup failure" in failing.output()


@pytest.mark.server
def test_a_forked_server_dies_with_its_stand_in(forked):
    server = forked("tiny/flux-t2i")
    child = psutil.Process(serving_pid(server))
    server.proc.kill()
    server.proc.wait()
    gone, _ = psutil.wait_procs([child], timeout=10)
    assert gone


@pytest.mark.server
def test_forked_servers_die_with_the_fork_server_and_their_stand_ins_say_so(start_server, monkeypatch):
    forks = ForkServer()
    try:
        monkeypatch.setenv(FORKSERVER_ENV, forks.address)
        server = start_server("tiny/flux-t2i")
        child = psutil.Process(serving_pid(server))
        forks.proc.kill()
        assert server.wait_exit(30) == 1
        gone, _ = psutil.wait_procs([child], timeout=10)
        assert gone
        assert f"[refserver] error: the fork server ended before server pid {child.pid}" in server.output()
    finally:
        forks.stop()


def test_a_fork_server_that_cannot_be_reached_leaves_serve_to_itself(tmp_path, monkeypatch):
    monkeypatch.setenv(FORKSERVER_ENV, f"{os.getpid()}:{tmp_path / 'gone.sock'}")
    done = subprocess.run(
        [*SERVE, "--model-path", "tiny/flux-t2i", "--port", "0", "--inject-fail-startup"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert (
        "[refserver] not forked (cannot reach it: No such file or directory): starting in this process" in done.stderr
    )
    assert "injected startup failure" in done.stdout


@pytest.mark.server
def test_a_runs_meter_counts_the_servers_it_forked_as_its_own_and_a_burner_outside(forked, tmp_path):
    """The general rule, not the fork server's variable: a server the run asked for is the run's, whoever forked it
    (its port's listener and that one's starter), also when it ends within the window, or becomes ready within it;
    a burner stays outside."""
    server = forked("tiny/flux-t2i")
    child = psutil.Process(serving_pid(server))
    run = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # a run's root: not above them
    servers = RunServers()
    servers.adopt(run.pid, server.proc.pid, server.port)  # as a run's pool does once its server is ready

    def cpu(proc: psutil.Process) -> float:
        return sum(proc.cpu_times()[:2])

    def window(adopted: RunServers | None, stop: bool = False) -> tuple[Interference, float, float, float]:
        """What the meter saw over three requests (and the server's stop), the server's CPU-s in it and before it,
        the burner's; ``adopted`` empty: the server adopted within the window."""
        before, burned = cpu(child), cpu(burner)
        meter = Meter(run.pid, servers=adopted)
        if adopted is not None and not adopted.roots:
            adopted.adopt(run.pid, server.proc.pid, server.port)
        for _ in range(3):
            server.image(**SMALL_IMAGE)
        served = cpu(child) - before
        if stop:
            server.stop()  # reaped by the fork server: its CPU time ends there
        return meter.stop(), served, before, cpu(burner) - burned

    try:
        with outside_burners(1, tmp_path) as (pid,):
            burner = psutil.Process(pid)
            seen, served, _, burned = window(servers)
            assert served > 0.1 and burned > 0.1 and seen.ours_cpu_s >= 0.8 * served
            assert seen.ours_cpu_s < served + 0.5 * burned  # the burner is not the run's
            assert seen.outside_cpu_s >= 0.9 * burned - 0.05
            seen, served, _, _ = window(None)  # the run's tree alone: the forked server is another's
            assert served > 0.1 and seen.ours_cpu_s < 0.5 * served
            seen, served, earlier, _ = window(RunServers(), stop=True)  # adopted within, stopped within
            assert served > 0.1 and seen.ours_cpu_s >= 0.8 * served
            assert seen.ours_cpu_s < served + 0.5 * earlier  # not its CPU time before the window
    finally:
        run.kill()
        run.wait()


def test_the_fork_server_is_named_by_pid_and_socket():
    assert forkserver_in({FORKSERVER_ENV: "123:/tmp/x/sock"}) == (123, "/tmp/x/sock")
    for value in ("", "123", "123:", ":/tmp/sock", "pid:/tmp/sock"):
        assert forkserver_in({FORKSERVER_ENV: value}) is None
    assert forkserver_in({}) is None


def test_what_imports_read_must_agree_and_the_first_difference_is_named():
    mine = identity(
        {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "SGLANG_PERF_LOG_DIR": "/a", "LD_LIBRARY_PATH": "/l"}
    )
    assert mine["env"] == {"HF_HUB_OFFLINE": "1"}  # per-server and unrelated variables do not count
    same = identity({"HF_HUB_OFFLINE": "1", "SGLANG_PERF_LOG_DIR": "/b", "PYTHONDONTWRITEBYTECODE": "1"})
    assert difference(mine, same) == ""
    assert difference(mine, identity({"HF_HUB_OFFLINE": "0", "TORCH_HOME": "/t"})) == (
        "its HF_HUB_OFFLINE is '0', the fork server's '1'"
    )
    assert difference(mine, {**mine, "python": "/other/python"}) == (
        f"its python is '/other/python', the fork server's {sys.executable!r}"
    )


def test_more_sys_path_entries_are_fine_unless_they_hold_a_module_the_fork_server_imported(tmp_path):
    mine = identity({})
    plain, shadowing = tmp_path / "plain", tmp_path / "shadowing"
    (plain / "conftest.py").parent.mkdir()
    (plain / "conftest.py").write_text("")
    (shadowing / "numpy").mkdir(parents=True)
    (shadowing / "numpy" / "__init__.py").write_text("")
    (plain / "same").mkdir()
    (plain / "same" / "__init__.py").write_text("")
    loaded = {"numpy": numpy.__file__, "json": json.__file__, "same": str(plain / "same" / "__init__.py")}
    assert difference(mine, {**mine, "path": [str(plain), *mine["path"]]}, loaded) == ""  # the same file: fine
    assert difference(mine, {**mine, "path": [str(shadowing), *mine["path"]]}, loaded) == (
        f"its sys.path entry {str(shadowing)!r} has 'numpy', which the fork server imported from elsewhere"
    )
    assert difference(mine, {**mine, "path": [*mine["path"][1:2], *mine["path"]]}, loaded) == ""  # twice
    assert difference(mine, {**mine, "path": mine["path"][::-1]}, loaded).startswith("its sys.path ")


def test_a_copy_of_the_package_with_the_same_files_serves_as_the_fork_servers_and_a_changed_one_does_not(tmp_path):
    """A ``git=`` side's worktree of an unchanged commit: its package first on sys.path, PYTHONSAFEPATH set. Forked
    only while its files are the fork server's; one changed file (a commit that slows the server) is named."""
    copy = shutil.copytree(PACKAGE, tmp_path / "worktree" / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__"))
    mine = identity({})
    loaded = {PACKAGE.name: str(PACKAGE / "__init__.py"), "json": json.__file__}
    theirs = {**mine, "package_dir": str(copy), "path": [str(copy.parent), *mine["path"][1:]]}
    assert package_digest(copy) == mine["package"]
    assert difference(mine, theirs, loaded) == ""
    assert difference(mine, {**theirs, "env": identity({"PYTHONSAFEPATH": "1"})["env"]}, loaded) == ""
    cli = copy / "refserver" / "cli.py"
    cli.write_text(cli.read_text() + "\n")
    changed = {**theirs, "package": package_digest(copy)}
    assert difference(mine, changed, loaded) == (
        f"its package {str(copy)!r} has other files than the fork server's {str(PACKAGE)!r}"
    )
