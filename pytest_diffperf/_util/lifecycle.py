"""A process's own life on Linux: die with its parent, adopt orphaned descendants, end as a child ended, and
children run to their end (an interrupt stops the child and waits for it)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_GRACE_S = 30.0  # what an interrupted child gets to clean up (its servers, worktrees) before SIGKILL


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> None:
    """Orphaned descendants are reparented to this process (Linux), so that they are still found and killed."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent: int, sig: signal.Signals = signal.SIGKILL) -> None:
    """``sig`` comes to this process when its parent ``parent`` dies (Linux); it exits at once if it already has."""
    _prctl(PR_SET_PDEATHSIG, int(sig))
    if os.getppid() != parent:
        os._exit(1)


def exit_text(code: int) -> str:
    """A return code in words: ``exit code 3``, ``signal SIGKILL``."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def exit_as(code: int) -> NoReturn:
    """End as a child that returned ``code`` did: that exit code, or killed by the same signal (``code`` < 0)."""
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


def run_to_end(command: Sequence[str], out: IO[str], grace_s: float = STOP_GRACE_S) -> int:
    """Run ``command`` (its output into ``out``) and return its exit code. An exception here (Ctrl-C, SIGTERM
    made an interrupt) first stops it: SIGTERM, ``grace_s`` to clean up, then SIGKILL; the child is waited for,
    so nothing it started outlives the caller's own cleanup. It runs in a session of its own: a terminal's
    Ctrl-C reaches it once, as that SIGTERM, not also as a SIGINT in the middle of its cleanup."""
    proc = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
