"""CPU-bound processes outside the test's process tree: the load another job puts on the machine."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil

BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
# A listener that burns CPU in a child of its own once a line comes on its stdin: the "server" a fork server started
# (not under the watchdog); it prints its port.
LISTEN = """
import socket, subprocess, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True)
sys.stdin.readline()
subprocess.run([sys.executable, "-c", {burn!r}])
time.sleep(60)
"""


@contextlib.contextmanager
def listening_burner(idle_seconds: float = 60) -> Iterator[tuple[int, int, int, subprocess.Popen[bytes]]]:
    """A server stand-in outside a run's tree: (an idle process's pid, the run's root or watchdog; the listener's
    pid; its port; the listener, whose stdin starts one second of CPU burning in a child). Both killed after."""
    idle = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({idle_seconds})"])
    listener = subprocess.Popen(
        [sys.executable, "-c", LISTEN.format(burn=BURN.format(seconds=1.0))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert listener.stdin is not None and listener.stdout is not None
        yield idle.pid, listener.pid, int(listener.stdout.readline()), listener
    finally:
        for proc in (idle, listener):
            proc.kill()
            proc.wait()
        assert listener.stdin is not None and listener.stdout is not None
        listener.stdin.close()
        listener.stdout.close()


def start_burning(listener: subprocess.Popen[bytes]) -> None:
    """Tell a ``listening_burner`` to burn its second of CPU."""
    assert listener.stdin is not None
    listener.stdin.write(b"go\n")
    listener.stdin.flush()


@contextlib.contextmanager
def outside_burners(count: int, folder: Path, seconds: float = 600) -> Iterator[list[int]]:
    """``count`` CPU burners, detached (a shell starts them in the background and exits, so they are nobody's
    child here: another job's processes); their pids while the block runs; killed after it (they also stop by
    themselves after ``seconds``)."""
    pids_file = folder / "burners.pids"
    script = " ".join(
        f"{sys.executable} -c {_quoted(BURN.format(seconds=seconds))} >/dev/null 2>&1 & echo $! >> {pids_file};"
        for _ in range(count)
    )
    subprocess.run(["sh", "-c", script], check=True)
    pids = [int(line) for line in pids_file.read_text().split()]
    time.sleep(0.3)  # under way
    try:
        yield pids
    finally:
        for pid in pids:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
        pids_file.unlink(missing_ok=True)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
