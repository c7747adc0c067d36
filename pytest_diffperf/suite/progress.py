"""Progress lines shown live while a test runs: a server starting and loading, long requests, regeneration.

pytest captures a test's output, and an xdist worker's terminal is not shown at all, so a plain
``print`` or ``terminalreporter.write_line`` from inside a test appears only afterwards, if ever.
Here a line goes

- in a plain run, to the terminal reporter with capture suspended (as pytest's live logging does);
- on an xdist worker, to the controller as a report of the running test (a passed ``setup`` report
  that carries ``diffperf_progress``; xdist forwards each report at once), which the controller's
  ``ProgressPrinter`` writes through its terminal reporter, prefixed with the worker's id.

Such reports count as nothing (pytest files passed setup reports under no category, and
``pytest_report_teststatus`` says so explicitly), so outcomes, JUnit and ``--lf`` are unaffected.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import pytest

PROGRESS_ATTR = "diffperf_progress"  # the attribute of a progress report (survives xdist's serialization)


class LiveProgress:
    """The callable the session's servers report progress to (``ServerPool.progress``)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.worker = hasattr(config, "workerinput")
        self.running: tuple[str, tuple[str, int | None, str]] | None = None  # the test now running: nodeid, location

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.running = (nodeid, location)

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.running = None

    def __call__(self, message: str) -> None:
        if self.worker:
            self._send(message)
        else:
            write_live(self.config, message)

    def _send(self, message: str) -> None:
        """A progress report of the running test (xdist's worker forwards it to the controller at once)."""
        if self.running is None:
            return  # outside a test a worker has no report to send; nothing runs there that needs one
        nodeid, location = self.running
        now = time.time()
        report = pytest.TestReport(
            nodeid, location, {}, "passed", None, "setup", [], 0.0, now, now, [], **{PROGRESS_ATTR: message}
        )
        self.config.hook.pytest_runtest_logreport(report=report)


class ProgressPrinter:
    """On the controller of an xdist run: writes the workers' progress lines as they arrive."""

    def __init__(self, config: pytest.Config):
        self.config = config

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        message = getattr(report, PROGRESS_ATTR, None)
        if message is not None and not hasattr(self.config, "workerinput"):
            node = getattr(report, "node", None)
            worker = getattr(getattr(node, "gateway", None), "id", None)
            write_live(self.config, f"[{worker}] {message}" if worker else str(message))


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """A progress report is no test outcome: no category, letter or word."""
    return ("", "", "") if getattr(report, PROGRESS_ATTR, None) is not None else None


def write_live(config: pytest.Config, message: str) -> None:
    """One line on the terminal now, outside pytest's capture (the next result letter starts a fresh line)."""
    reporter: Any = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    capture: Any = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        reporter.write_line(message)


def register(config: pytest.Config) -> LiveProgress:
    """Register the live-progress plugins of this process; returns the callable servers report to."""
    live = LiveProgress(config)
    config.pluginmanager.register(live, "diffperf-progress")
    config.pluginmanager.register(sys.modules[__name__], "diffperf-progress-status")
    if not live.worker:
        config.pluginmanager.register(ProgressPrinter(config), "diffperf-progress-printer")
    return live
