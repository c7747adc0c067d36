"""A run that judged nothing: every scenario skipped or deselected. It says so, and is not green.

A wrong runner label (every multi-GPU scenario "needs 2 devices") or a ``-k`` typo would otherwise pass
with exit status 0. Such a run exits 5 (pytest's "no tests ran") unless ``--diffperf-allow-empty``;
a ``-k`` that selects no scenario gets the scenario names closest to its words. A dry run judges
nothing by design and keeps its own exit status.
"""

from __future__ import annotations

import re

import pytest

from .._util.text import did_you_mean
from ..results.model import nothing_judged, skipped_line
from .report import ResultsCollector
from .session import DiffperfSession

_KEYWORDS = frozenset({"and", "or", "not"})


class EmptyRun:
    """Registered on the controller (or the only process) of a diffperf run."""

    def __init__(self, session: DiffperfSession, collector: ResultsCollector):
        self.session = session
        self.collector = collector
        self.line: str | None = None  # set at the session's end when nothing was judged

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if hasattr(config, "workerinput") or config.option.collectonly or self.session.settings.diffperf_dry_run:
            return
        if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            return  # failed or interrupted: that is what it says
        results = list(self.collector.results.values())
        if not nothing_judged(results):
            return
        why = f"every scenario skipped ({skipped_line(results)})" if results else "no scenario selected"
        hint = keyword_hint(str(config.option.keyword or ""), self.session.scenario_ids()) if not results else ""
        allowed = self.session.settings.diffperf_allow_empty
        self.line = f"diffperf: nothing was judged: {why}{hint}" + (
            " (allowed: --diffperf-allow-empty)" if allowed else "; pass --diffperf-allow-empty if that is expected"
        )
        session.exitstatus = pytest.ExitCode.OK if allowed else pytest.ExitCode.NO_TESTS_COLLECTED

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.line is not None:
            terminalreporter.write_sep("-", "diffperf: nothing judged")
            terminalreporter.write_line(self.line)


def keyword_hint(expression: str, names: list[str]) -> str:
    """For a ``-k`` that selected no scenario: each of its words that no scenario name contains, with the
    names closest to it (``"; -k: no scenario name contains 'flux_tny'; did you mean: flux_tiny_t2i"``)."""
    words = [w for w in re.findall(r"[\w:+\-.\[\]/]+", expression) if w.lower() not in _KEYWORDS]
    unmatched = [w for w in words if not any(w.lower() in name.lower() for name in names)]
    return "".join(f"; -k: no scenario name contains {w!r}{did_you_mean(w, names, list_known=5)}" for w in unmatched)
