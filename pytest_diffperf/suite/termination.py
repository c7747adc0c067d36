"""SIGTERM ends a run as Ctrl-C does.

A CI system that cancels a job, or stops it at its time limit, sends SIGTERM first; by default that
ends pytest at once, without a summary, results file or JUnit XML. Here it raises
``KeyboardInterrupt`` in the main thread instead: pytest stops at the running test, its servers are
stopped, and what the finished scenarios measured is still reported and written (exit code 2).
A second SIGTERM ends the process at once. A SIGTERM handler someone else set (or SIGTERM ignored)
is left as it is; xdist workers keep the default (the controller reports for them).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest


class SigtermAsInterrupt:
    """Turns the first SIGTERM into ``KeyboardInterrupt`` while the run lasts (a pytest plugin)."""

    @property
    def installed(self) -> bool:
        """SIGTERM's handler is this one's (it no longer is after the first SIGTERM or the run's end)."""
        return signal.getsignal(signal.SIGTERM) == self._interrupt

    def install(self) -> bool:
        """Set the handler where SIGTERM is at its default, in the main thread; whether it was set."""
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._interrupt)
        return self.installed

    def _interrupt(self, signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the next one ends the process at once
        raise KeyboardInterrupt("SIGTERM")

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def register(config: pytest.Config) -> None:
    """Handle SIGTERM in this process, unless it is an xdist worker."""
    if hasattr(config, "workerinput"):
        return
    handler = SigtermAsInterrupt()
    if handler.install():
        config.pluginmanager.register(handler, "diffperf-sigterm")
