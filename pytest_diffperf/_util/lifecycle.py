"""A process's own life on Linux: die with its parent, adopt orphaned descendants, end as a child ended."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from typing import NoReturn

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


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


def exit_as(code: int) -> NoReturn:
    """End as a child that returned ``code`` did: that exit code, or killed by the same signal (``code`` < 0)."""
    if code < 0:
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)
