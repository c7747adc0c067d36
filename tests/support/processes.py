"""The processes a test starts, found and watched: a run's descendants until the moment to act on them, and the
processes marked by a variable in their environment (a server a run started, its watchdog, its workers).

``watched`` starts a real ``python`` process with the default signal handlers, lets the test poll its
descendants for the moment to interrupt or kill (``Watched.moment``), and kills whatever of it is left
when the block ends, whatever happened.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import psutil

from tests.support.signals import python_with_default_signals

T = TypeVar("T")


@dataclass
class Watched:
    """A real process a test started (stderr piped), and every descendant of it seen so far."""

    proc: subprocess.Popen[str]
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    def descendants(self) -> list[psutil.Process]:
        """Its descendants now (each is kept in ``seen``)."""
        children = psutil.Process(self.proc.pid).children(recursive=True)
        self.seen.update({c.pid: c for c in children})
        return children

    def moment(self, pick: Callable[[list[psutil.Process]], T | None], within: float = 240.0) -> T:
        """Poll the descendants until ``pick`` returns something true while the process runs; a second later
        (what it started then has started too), what ``pick`` returned."""
        picked: T | None = None
        deadline = time.monotonic() + within
        while not picked and time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                picked = pick(self.descendants())
            if not picked:
                time.sleep(0.1)
        if not picked or self.proc.poll() is not None:
            said = self.proc.stderr.read() if self.proc.stderr and self.proc.poll() is not None else ""
            raise AssertionError(f"no moment to act within {within} s, or it ended before:\n{said}")
        time.sleep(1)
        self.descendants()
        return picked

    def end(self, timeout: float) -> tuple[int, str]:
        """Wait for it to end: its exit code and stderr."""
        _, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, err


@contextlib.contextmanager
def watched(command: list[str], cwd: os.PathLike[str], env: dict[str, str]) -> Iterator[Watched]:
    """``python COMMAND`` started in ``cwd`` (stdout discarded, stderr piped); when the block ends, it and every
    descendant seen are killed, whatever happened."""
    proc = subprocess.Popen(
        python_with_default_signals(*command), cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    run = Watched(proc)
    try:
        yield run
    finally:
        for p in run.seen.values():
            with contextlib.suppress(psutil.Error):
                p.kill()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def marked(var: str, tag: str) -> list[psutil.Process]:
    """The live processes whose environment holds ``var=tag`` (a server's watchdog, HTTP process, workers, ...)."""
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(var) == tag and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
    return found


def gone(var: str, tag: str, within: float, poll_s: float = 0.2) -> list[psutil.Process]:
    """Poll until no process marked ``var=tag`` is left; what is left after ``within`` seconds."""
    deadline = time.monotonic() + within
    while (left := marked(var, tag)) and time.monotonic() < deadline:
        time.sleep(poll_s)
    return left
