"""Results of the run, gathered from test reports (so xdist workers' results arrive too).

The controller writes the ``--diffperf-json`` file (with the run's provenance), appends it to the
``--diffperf-history`` folder, writes the ``--diffperf-html`` report and, when
``GITHUB_STEP_SUMMARY`` is set, the step summary; the terminal gets the summary table, the
comparison with ``--diffperf-compare-to`` and where each file went. The header names the run's
provenance and where the server logs are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import TypeAdapter

from .._util.atomicfile import write_atomic
from .._util.ci import append_step_summary
from .._util.text import format_table
from ..errors import DiffperfError
from ..judging.interference import run_line
from ..results import history
from ..results.model import RESULTS_VERSION, ScenarioResult, fails_run
from ..results.nextsteps import RunContext, details, wrapped
from ..results.provenance import Provenance, collect, machine_note
from ..results.stepsummary import markdown, totals
from ..results.tables import REASON_WIDTH, ordered, summary_table, unreported_line
from ..serving.record import ServerRecord
from .logdir import describe
from .options import detached_paths_note
from .regen import get_regen
from .runs import case_file_lines, comparison_lines, write_html
from .stash import get_session
from .verdictsettings import priors_line

if TYPE_CHECKING:
    from .session import DiffperfSession

RESULT_PROPERTY = "diffperf_result"
SCENARIO_PROPERTY = "diffperf_scenario"
SERVER_PROPERTY = "diffperf_server"  # the server of a scenario that failed without a result (JSON)
SERVERS_PROPERTY = "diffperf_servers"  # every server a scenario started, failed starts included (JSON list)
STARTS = TypeAdapter(list[ServerRecord])


class ResultsCollector:
    """The run's results and what is written from them: a pytest plugin registered once per process.

    Owns the scenario results gathered from the test reports (an xdist controller gets its workers'),
    the results file (written whole or not at all), the consistency summary, the step summary,
    history and HTML report, the report header and the terminal summary's lines. It measures and
    judges nothing: the scenario items put their results on the reports.
    """

    def __init__(self, header: dict[str, Any], json_path: Path | None, artifacts_dir: Path | None = None):
        self.header = header
        self.json_path = json_path
        self.artifacts_dir = artifacts_dir  # where the consistency summary.json goes
        self.results: dict[str, ScenarioResult] = {}
        self.written: list[str] = []  # what this run wrote, for the terminal summary
        self._provenance: Provenance | None = None
        self._config: pytest.Config | None = None
        self._scenarios: dict[str, str] = {}  # node id -> scenario, from the first report that names it
        self._started: dict[tuple[int | None, int, str], ServerRecord] = {}  # (pid, port, log) -> server start

    # -- gathering -------------------------------------------------------------------------------
    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._config = session.config

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        scenario = props.get(SCENARIO_PROPERTY) or self._scenarios.get(report.nodeid) or self._scenario_of(report)
        if scenario is None:
            return
        self._scenarios[report.nodeid] = str(scenario)
        for start in STARTS.validate_json(str(props[SERVERS_PROPERTY])) if SERVERS_PROPERTY in props else ():
            self._started[start.pid, start.port, start.log] = start
        if RESULT_PROPERTY in props:
            self.results[report.nodeid] = ScenarioResult.model_validate_json(str(props[RESULT_PROPERTY]))
        current = self.results.get(report.nodeid, None)
        if report.failed and (
            current is None or not fails_run(current.outcome, self.header.get("inconclusive", "report"))
        ):
            # pytest reports it FAILED or ERROR (a teardown error, an xdist worker that died): so does the file
            server = ServerRecord.model_validate_json(str(props[SERVER_PROPERTY])) if SERVER_PROPERTY in props else None
            update = {"verdict": "error", "message": crash_line(report)}
            self.results[report.nodeid] = (
                current.model_copy(update=update)
                if current is not None
                else ScenarioResult(scenario=str(scenario), server=server, **update)
            )
        elif report.skipped and current is None:
            self.results[report.nodeid] = ScenarioResult(
                scenario=str(scenario), verdict="skipped", message=skip_reason(report)
            )

    def _scenario_of(self, report: pytest.TestReport) -> str | None:
        """A failed report that carries no properties (an xdist worker that died before its test reported):
        the scenario its node id names, if it is one of the session's."""
        session = get_session(self._config) if self._config is not None and report.failed else None
        name = report.nodeid.rpartition("::")[2]
        known = session is not None and (name in session.cases or name in session.baselines.scenarios)
        return name if known and "::" in report.nodeid else None

    # -- header ----------------------------------------------------------------------------------
    @pytest.hookimpl
    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        self._config = config
        session = get_session(config)
        if session is None:
            return []
        note = detached_paths_note(config)
        primary = session.baselines.primary
        machine = machine_note(
            session.baselines.raw[primary].get("metadata"), str(primary), self.provenance(session),
            session.settings.diffperf_hardware,
        )  # fmt: skip
        return [
            f"diffperf: {self.provenance(session).line()}",
            *([f"diffperf: note: {machine}"] if machine else []),
            priors_line(
                session.priors,
                session.settings.diffperf_noise,
                session.launcher.name,
                session.settings.diffperf_hardware,
            ),
            describe(config, session.workdir),
            *case_file_lines(session),
            *([f"diffperf: warning: {note}"] if note else []),
        ]

    def provenance(self, session: DiffperfSession) -> Provenance:
        """This run's provenance (asked once: a vendor tool names the device)."""
        if self._provenance is None:
            prefix = session.baselines.runner_prefix
            repo = session.baselines.primary.parent
            self._provenance = collect(session.launcher.name, session.settings.diffperf_hardware, prefix, repo=repo)
        return self._provenance

    # -- the end of the run ----------------------------------------------------------------------
    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.results:
            return
        session = get_session(terminalreporter.config)
        results = self.ordered(session)
        terminalreporter.section("diffperf summary")
        if get_regen(terminalreporter.config) is None:  # a regeneration run's own summary says what it measured
            for line in format_table(summary_table(results, REASON_WIDTH), right_from=None):
                terminalreporter.write_line(line)
            width = max(int(terminalreporter._tw.fullwidth), 80)
            for line in wrapped(details(results, self.run_context(session)), width):
                terminalreporter.write_line(line)
        terminalreporter.write_line(totals(results))
        interference = run_line(results)
        if interference is not None:
            terminalreporter.write_line(f"diffperf: interference: {interference}")
        unreported = unreported_line(results)
        if unreported is not None:
            terminalreporter.write_line(f"diffperf: {unreported}")
        if session is not None and session.settings.diffperf_compare_to is not None:
            for line in comparison_lines(session, results, terminalreporter.config):
                terminalreporter.write_line(line)
        for line in self.written:
            terminalreporter.write_line(line)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.results:
            return  # xdist workers report through the controller
        diffperf_session = get_session(session.config)
        document = self.document(diffperf_session)
        results = self.ordered(diffperf_session)
        try:  # each file whole or not at all (a full disk): one error line, the run fails, no traceback
            if self.json_path:
                try:
                    write_atomic(self.json_path, json.dumps(document, indent=2) + "\n")
                except OSError as exc:  # the old file is left whole
                    raise DiffperfError(f"cannot write: {exc.strerror or exc}", source=str(self.json_path)) from None
                self.written.append(f"diffperf results: {self.json_path}")
            compared = [r.consistency for r in self.results.values() if r.consistency]
            if self.artifacts_dir and compared:
                from ..consistency.artifacts import write_summary  # numpy and PIL: loaded only by runs that compared

                write_summary(compared, self.artifacts_dir)
            run = self.run_context(diffperf_session)
            append_step_summary(markdown(results, self.header, document.get("provenance"), run=run))
            if diffperf_session is not None:
                self._history_and_html(diffperf_session, session.config, document, results)
        except OSError as exc:
            self._failed(session, f"cannot write {exc.filename or 'a results file'}: {exc.strerror or exc}")
        except DiffperfError as exc:
            self._failed(session, str(exc))

    def _failed(self, session: pytest.Session, problem: str) -> None:
        self.written.append(f"diffperf: error: {problem}")
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _history_and_html(
        self, session: DiffperfSession, config: pytest.Config, document: dict[str, Any], results: list[ScenarioResult]
    ) -> None:
        if session.settings.diffperf_history is not None:
            self.written.append(f"diffperf history: {history.save(session.settings.diffperf_history, document)}")
        if session.settings.diffperf_html is not None:
            self.written.append(f"diffperf report: {write_html(session, config, document, results)}")

    def run_context(self, session: DiffperfSession | None) -> RunContext:
        """What the ``next:`` lines name: this run's results file, baseline files and ground-truth folder."""
        settings = session.settings if session is not None else None
        results_file = str(self.json_path) if self.json_path else None
        gt_dir = str(settings.diffperf_gt_dir) if settings is not None and settings.diffperf_gt_dir else None
        return RunContext.of(self.header, results_file, gt_dir)

    def ordered(self, session: DiffperfSession | None) -> list[ScenarioResult]:
        """The results in the baseline file's order (xdist delivers them in completion order)."""
        return ordered(self.results.values(), session.scenario_ids() if session is not None else ())

    def document(self, session: DiffperfSession | None = None) -> dict[str, Any]:
        results = self.ordered(session)
        return {
            "version": RESULTS_VERSION,
            **self.header,
            "provenance": (
                self.provenance(session).model_copy(update={"interference": run_line(results)}).model_dump()
                if session is not None
                else None
            ),
            "rows": [row.model_dump() for r in results for row in r.rows],
            "scenarios": [{k: v for k, v in r.document().items() if k != "rows"} for r in results],  # rows: above
            "servers": [server.model_dump() for server in self.servers(results)],
        }

    def servers(self, results: list[ScenarioResult]) -> list[ServerRecord]:
        """Every server the run started, in the order they started (a failed start, a start on other ports after a
        port was taken, a fresh server of a re-measure), then any other a result names (an A/B run's)."""
        started = list(self._started.values())
        known = {(s.pid, s.port) for s in started}
        named = {(r.server.pid, r.server.port): r.server for r in results if r.server}
        for server in (s for r in results if r.ab for s in r.ab.servers):  # A/B: each side's, from its own pools
            named.setdefault((server.pid, server.port), server)
        return started + [server for key, server in named.items() if key not in known]


def crash_line(report: pytest.TestReport) -> str:
    """A failed report's one-line summary (the crash message, else the first line)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    message = str(getattr(crash, "message", "") or "")
    if message:
        return message.splitlines()[0]
    return " ".join(str(report.longrepr).strip().splitlines()[:1])


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return ""
