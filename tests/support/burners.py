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
