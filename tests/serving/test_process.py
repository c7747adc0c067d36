"""ServerProcess on small real processes: fatal patterns, exit, readiness progress, whole-tree teardown."""

from __future__ import annotations

import re
import sys
import textwrap
import time

import psutil
import pytest

from pytest_diffperf.serving import process
from pytest_diffperf.serving.process import ServerError, ServerProcess, free_port

pytestmark = pytest.mark.server  # starts stand-in server processes


def script_server(tmp_path, body: str) -> ServerProcess:
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(body))
    return ServerProcess([sys.executable, "-u", str(script)], {}, tmp_path / "log" / "server.log", free_port())


def test_fatal_pattern_fails_at_once_with_log_tail(tmp_path):
    server = script_server(
        tmp_path,
        """
        import time
        print("loading weights")
        print("Fatal Python error: Segmentation fault")
        time.sleep(60)
    """,
    )
    server.start()
    try:
        with pytest.raises(ServerError) as info:
            server.wait_ready(timeout=30)
    finally:
        server.stop()
    message = str(info.value)
    assert "printed a fatal error while starting: Fatal Python error: Segmentation fault" in message
    assert "--- last 2 log line(s) ---\nloading weights\nFatal Python error" in message
    assert (tmp_path / "log" / "server.log").read_text().startswith("loading weights")


def test_exit_during_startup_reports_code_at_once_not_a_poll_later(tmp_path, monkeypatch):
    monkeypatch.setattr(process, "HEALTH_POLL_S", 60.0)  # the exit comes between two polls of /health
    server = script_server(tmp_path, "import sys, time\nprint('no GPU found')\ntime.sleep(0.5)\nsys.exit(3)\n")
    server.start()
    started = time.monotonic()
    with pytest.raises(ServerError, match=r"exited with code 3 while starting(.|\n)*no GPU found"):
        server.wait_ready(timeout=120, every=120)  # nor a progress line
    assert time.monotonic() - started < 30  # not after the next poll (60 s): the wait between polls ends with it


def test_readiness_deadline_with_progress_lines(tmp_path):
    server = script_server(tmp_path, "import time\ntime.sleep(60)\n")
    lines: list[str] = []
    server.start()
    try:
        with pytest.raises(ServerError, match=r"not ready after 2 s \(--diffperf-startup-timeout\)"):
            server.wait_ready(timeout=1.6, progress=lines.append, every=0.5)
    finally:
        server.stop()
    assert len(lines) >= 2 and all(re.fullmatch(rf"diffperf: {server.label} loading: \d+ s", line) for line in lines)


def test_load_marker_gives_load_time_and_stop_kills_the_whole_tree(tmp_path):
    server = script_server(
        tmp_path,
        """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(f"[server-load] workers_ready_monotonic_ns={time.monotonic_ns()}", flush=True)
        time.sleep(60)
    """,
    )
    server.start()
    deadline = time.monotonic() + 20
    while server.load_ms is None and time.monotonic() < deadline:
        time.sleep(0.05)
    tree = [psutil.Process(server.pid)] + psutil.Process(server.pid).children(recursive=True)
    # the watchdog, the server and its child
    assert len(tree) == 3 and "pytest_diffperf.serving.watchdog" in tree[0].cmdline()
    assert server.load_ms is not None and 0 < server.load_ms < 20000
    server.stop()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in tree)


def test_a_server_that_gives_up_its_start_is_reported_with_the_line_that_says_why(tmp_path):
    """As SGLang 0.5.23 does when its warmup fails: one line saying why, then SIGTERM to itself."""
    server = script_server(
        tmp_path,
        """
        import os, signal
        print("[12-05 14:10:02] Server warmup failed; aborting startup: RuntimeError: mat1 and mat2 differ")
        print("shutting down")
        os.kill(os.getpid(), signal.SIGTERM)
    """,
    )
    server.start()
    try:
        with pytest.raises(ServerError) as info:
            server.wait_ready(timeout=30)
    finally:
        server.stop()
    assert info.value.problem == (
        "was killed by signal SIGTERM while starting: "
        "Server warmup failed; aborting startup: RuntimeError: mat1 and mat2 differ"
    )
