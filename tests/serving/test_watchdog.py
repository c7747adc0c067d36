"""The watchdog on small real process trees: it outlives nothing it watches and leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import psutil
import pytest

from pytest_diffperf.serving import watchdog
from tests.support.signals import python_with_default_signals

pytestmark = pytest.mark.server  # starts stand-in server processes

# A "server" that starts a worker (as SGLang's schedulers) and one orphan of its own (double fork), then serves.
SERVER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    marker = sys.argv[1]
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])
    if os.fork() == 0:  # an orphan: its parent exits at once
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", marker])
        os._exit(0)
    print("ready", flush=True)
    time.sleep(120)
    """
)


def marked(marker: str) -> list[psutil.Process]:
    """Processes whose command line holds ``marker`` (only the ones this test started carry it)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if marker in (proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            pass
    return found


def wait_none(marker: str, within: float = 15.0) -> list[psutil.Process]:
    deadline = time.monotonic() + within
    while (left := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def kill_marked(marker: str) -> None:
    for proc in marked(marker):
        proc.kill()


def wait_count(marker: str, count: int, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while len(marked(marker)) < count:
        assert time.monotonic() < deadline, f"only {len(marked(marker))} of {count} processes started"
        time.sleep(0.05)


@pytest.fixture
def marker():
    tag = f"diffperf-watchdog-test-{uuid.uuid4().hex}"
    yield tag
    kill_marked(tag)


def launcher_script(tmp_path, marker: str) -> list[str]:
    """A parent (as pytest) that starts the server under a watchdog of itself, then waits."""
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    command = watchdog.wrap([sys.executable, str(server), marker], [])
    parent = tmp_path / "parent.py"
    parent.write_text(
        "import subprocess, sys, time\n"
        f"cmd = {command!r}\n"
        "cmd[cmd.index('--'):cmd.index('--')] = ['--watch', str(__import__('os').getpid())]\n"
        "subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL)\n"
        "time.sleep(120)\n"
    )
    return python_with_default_signals(str(parent), marker)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_parent_death_kills_the_whole_tree(tmp_path, marker, sig):
    parent = subprocess.Popen(launcher_script(tmp_path, marker), env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        wait_count(marker, 4)  # the parent, the server, its worker, its orphan (the watchdog's args hold the path)
        parent.send_signal(sig)
        parent.wait(timeout=10)
        assert wait_none(marker) == []
    finally:
        parent.kill()
        parent.wait()


def run_wrapped(tmp_path, body: str) -> subprocess.Popen[bytes]:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.Popen(watchdog.wrap([sys.executable, str(script)], [os.getpid()]), start_new_session=True)


def test_ends_as_the_server_did(tmp_path):
    exited = run_wrapped(tmp_path, "import sys; sys.exit(3)")
    assert exited.wait(timeout=30) == 3
    killed = run_wrapped(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert killed.wait(timeout=30) == -signal.SIGKILL


def test_stopped_watchdog_leaves_nothing_and_a_server_that_exits_leaves_no_worker(tmp_path, marker):
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    proc = subprocess.Popen(watchdog.wrap([sys.executable, str(server), marker], [os.getpid()]), start_new_session=True)
    try:
        wait_count(marker, 3)
        proc.terminate()
        assert proc.wait(timeout=15) == watchdog.STOPPED_CODE
        assert wait_none(marker) == []
    finally:
        proc.kill()
        proc.wait()
    # the server exits on its own, its worker still running: the worker goes too
    script = (
        f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', {marker!r}])"
    )
    proc = subprocess.Popen(watchdog.wrap([sys.executable, "-c", script], [os.getpid()]), start_new_session=True)
    try:
        assert proc.wait(timeout=30) == 0
        assert wait_none(marker) == []
    finally:
        proc.kill()
        proc.wait()


def test_a_dead_watched_process_means_no_server(tmp_path, marker):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    proc = subprocess.Popen(
        watchdog.wrap([sys.executable, "-c", "import time; time.sleep(120)", marker], [gone.pid]),
        start_new_session=True,
    )
    try:
        assert proc.wait(timeout=30) == watchdog.STOPPED_CODE
        assert marked(marker) == []
    finally:
        proc.kill()
        proc.wait()


def test_no_command_is_a_usage_error():
    done = subprocess.run(
        [sys.executable, "-m", "pytest_diffperf.serving.watchdog", "--"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "no command given" in done.stderr and "Traceback" not in done.stderr
