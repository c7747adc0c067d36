"""No server outlives pytest, whatever stops it: each signal to pytest (and to an xdist worker), at load time and
mid-request, leaves no process of the run's servers a few seconds later.

A real pytest subprocess runs a reference-server case whose server (and watchdog) carry a unique marker in their
environment; the processes are counted by that marker, and only they (and the pytest this test started) are killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid

import psutil
import pytest

from pytest_diffperf.protocol import FORKSERVER_ENV
from tests.support.processes import gone, marked
from tests.support.signals import python_with_default_signals
from tests.support.suite import GENEROUS, kill_trees, tiny_case

pytestmark = pytest.mark.server


@pytest.fixture(autouse=True)
def servers_started_as_users_runs_start_them(monkeypatch):
    """The process tree under test is the one users' runs have: no server forked from the suite's fork server
    (whose forks' own orphan handling is tested in tests/refserver/test_forkserver.py)."""
    monkeypatch.delenv(FORKSERVER_ENV, raising=False)


MARKER_VAR = "DIFFPERF_ORPHAN_TEST"
LOAD_DELAY_MS = 60000  # the load lasts long enough to be interrupted
STAGE_DELAY_MS = 60000  # so does the first request
GONE_WITHIN_S = 15.0  # the watchdog polls every 0.2 s and gives 3 s of grace


def refserver(tag: str) -> psutil.Process | None:
    """The reference server itself (not its watchdog, whose command line holds the server's)."""
    return next((p for p in marked(MARKER_VAR, tag) if p.cmdline()[1:3] == ["-m", "pytest_diffperf.refserver"]), None)


def watchdog_of(server: psutil.Process) -> psutil.Process:
    """The server's parent, its watchdog."""
    watchdog = server.parent()
    assert watchdog is not None and "pytest_diffperf.serving.watchdog" in " ".join(watchdog.cmdline())
    return watchdog


def wait_for(moment: str, tag: str, pytest_proc: subprocess.Popen[bytes], within: float = 120.0) -> psutil.Process:
    """Wait until the server is loading (``load``: spawned, not listening yet) or serving a request (``request``:
    a client connection is open on its listening port); the server process."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert pytest_proc.poll() is None, "pytest ended before the moment came"
        server = refserver(tag)
        if server is not None:
            try:
                conns = server.net_connections(kind="tcp")
            except psutil.Error:
                conns = []
            listening = {c.laddr.port for c in conns if c.status == psutil.CONN_LISTEN}
            if moment == "load" and not listening:
                return server
            if moment == "request" and any(
                c.status == psutil.CONN_ESTABLISHED and c.laddr.port in listening for c in conns
            ):
                return server
        time.sleep(0.1)
    raise AssertionError(f"no {moment} moment within {within} s")


def start_run(pytester, suite, tag: str, moment: str, *extra: str) -> subprocess.Popen[bytes]:
    flags = (
        f"--inject-load-delay {LOAD_DELAY_MS}"
        if moment == "load"
        else f"--inject-delay DenoisingStage={STAGE_DELAY_MS}"
    )
    case = tiny_case("orphan", flags, timeout_s=300, perf_warmup_requests=1)
    case["frameworks"]["sglang"]["extra_env"] = {MARKER_VAR: tag}
    args = suite([case], {"orphan": GENEROUS})
    return subprocess.Popen(
        python_with_default_signals("-m", "pytest", *args, "--diffperf-startup-timeout=300", *extra),
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TMPDIR": str(pytester.path)},
        start_new_session=True,  # as a terminal job; only this process is signalled
    )


def cleanup(proc: subprocess.Popen[bytes], tag: str) -> None:
    """Kill what this test started, by pid: the pytest run, its workers, and any marked process left."""
    kill_trees([proc.pid, *(p.pid for p in marked(MARKER_VAR, tag))])
    proc.wait()


@pytest.mark.parametrize("moment", ["load", "request"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL], ids=lambda s: s.name)
def test_no_server_outlives_pytest(pytester, suite, sig, moment):
    tag = uuid.uuid4().hex
    proc = start_run(pytester, suite, tag, moment)
    try:
        wait_for(moment, tag, proc)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        assert gone(MARKER_VAR, tag, GONE_WITHIN_S) == [], f"servers left after {sig.name} at {moment}"
    finally:
        cleanup(proc, tag)


@pytest.mark.parametrize("target", ["worker", "controller"])
def test_no_server_outlives_a_killed_xdist_process(pytester, suite, target):
    tag = uuid.uuid4().hex
    proc = start_run(pytester, suite, tag, "request", "-n", "1", "--max-worker-restart=0")
    try:
        server = wait_for("request", tag, proc)
        watchdog = watchdog_of(server)
        worker = watchdog.parent()
        assert worker is not None and worker.ppid() == proc.pid  # an xdist worker of our pytest
        (worker if target == "worker" else psutil.Process(proc.pid)).kill()
        assert gone(MARKER_VAR, tag, GONE_WITHIN_S) == [], f"servers left after SIGKILL of the xdist {target}"
        if target == "worker":  # pytest reports the test FAILED (the worker crashed): so does the results file
            assert proc.wait(timeout=60) == 1
            (scenario,) = json.loads((pytester.path / "results.json").read_text())["scenarios"]
            assert (scenario["verdict"], scenario["outcome"]) == ("error", "error")
            assert "crashed" in scenario["message"]
    finally:
        cleanup(proc, tag)


def test_a_killed_watchdog_fails_its_test_and_leaves_no_server(pytester, suite):
    """SIGKILL of the server's watchdog (the pid the results file reports) mid-request: the server it can no
    longer stop is found by its token and stopped, the test fails naming the watchdog, pytest ends."""
    tag = uuid.uuid4().hex
    proc = start_run(pytester, suite, tag, "request")
    try:
        server = wait_for("request", tag, proc)
        watchdog = watchdog_of(server)
        watchdog.kill()
        assert proc.wait(timeout=60) == 1
        assert gone(MARKER_VAR, tag, GONE_WITHIN_S) == [], "the server outlived its killed watchdog"
        result = json.loads((pytester.path / "results.json").read_text())
        (scenario,) = result["scenarios"]
        assert scenario["verdict"] == "error"
        assert f"watchdog (pid {watchdog.pid}) was killed by signal SIGKILL" in scenario["message"]
    finally:
        cleanup(proc, tag)


def test_a_killed_server_fails_its_test_and_leaves_nothing(pytester, suite):
    """SIGKILL of the server itself mid-request (the OOM killer's choice): the test fails naming the signal, its
    watchdog ends, pytest ends with its results written."""
    tag = uuid.uuid4().hex
    proc = start_run(pytester, suite, tag, "request")
    try:
        server = wait_for("request", tag, proc)
        watchdog = watchdog_of(server)
        server.kill()
        assert proc.wait(timeout=60) == 1
        assert gone(MARKER_VAR, tag, GONE_WITHIN_S) == []
        assert not watchdog.is_running() or watchdog.status() == psutil.STATUS_ZOMBIE
        (scenario,) = json.loads((pytester.path / "results.json").read_text())["scenarios"]
        assert scenario["verdict"] == "error"
        assert "killed by signal SIGKILL" in scenario["message"], scenario["message"]
    finally:
        cleanup(proc, tag)
