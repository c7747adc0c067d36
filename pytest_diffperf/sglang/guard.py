"""SGLang's own code run in this process (its case files, its harness): under a time limit, and every process it
started ended afterwards.

The limit is a ``SIGALRM`` timer (in the main thread, where signals are delivered; elsewhere none is
set): SGLang's code that sleeps or blocks at import is interrupted with one error naming the file.
An alarm already set (pytest-timeout's) is restored with the time it had left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

import psutil

from ..errors import DiffperfError

TIMEOUT_ENV = "DIFFPERF_SGLANG_LOAD_TIMEOUT"
DEFAULT_TIMEOUT_S = 60.0  # loading a release's case files takes about a second
KILL_WAIT_S = 3.0
REPEAT_S = 0.5  # the alarm again after this, until the block has ended


class _TimedOut(BaseException):
    """Raised by the alarm (a BaseException: SGLang's ``except Exception`` does not swallow it)."""


def timeout_s() -> float:
    """The limit: ``$DIFFPERF_SGLANG_LOAD_TIMEOUT`` seconds, else the default; DiffperfError for a bad value."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise DiffperfError(f"expected a positive number of seconds, got {text!r}", source=f"${TIMEOUT_ENV}")
    return value


@contextlib.contextmanager
def foreign_code(what: str, where: str) -> Iterator[None]:
    """Run SGLang's ``what`` (from file ``where``) inside the block: at most ``timeout_s()`` seconds, then one
    DiffperfError; the processes it started (and theirs) are killed when the block ends, however it ends."""
    limit = timeout_s()
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGALRM")
    started = time.monotonic()
    previous_handler: object = None
    previous_timer = (0.0, 0.0)
    if alarm:

        def on_alarm(_signum: int, _frame: FrameType | None) -> None:
            raise _TimedOut

        previous_handler = signal.signal(signal.SIGALRM, on_alarm)
        # repeating: an alarm that lands in a callback whose exceptions Python ignores (a weakref's) comes again
        previous_timer = signal.setitimer(signal.ITIMER_REAL, limit, REPEAT_S)
    try:
        yield
    except _TimedOut:
        raise DiffperfError(
            f"SGLang's {what} did not finish in {limit:g} s (it may wait for something this machine lacks; "
            f"${TIMEOUT_ENV} sets the limit)",
            source=where,
        ) from None
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous_handler if previous_handler is not None else signal.SIG_DFL)  # type: ignore[arg-type]
            if previous_timer[0] > 0:  # someone else's alarm: re-armed with what it had left
                left = max(previous_timer[0] - (time.monotonic() - started), 0.001)
                signal.setitimer(signal.ITIMER_REAL, left, previous_timer[1])
        _end_started(me, before)


def _end_started(me: psutil.Process, before: set[int]) -> None:
    """Kill the processes started since ``before`` was taken (children first), and wait for them."""
    try:
        started = [p for p in me.children(recursive=True) if p.pid not in before]
    except psutil.Error:
        return
    for proc in reversed(started):
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(started, timeout=KILL_WAIT_S)
