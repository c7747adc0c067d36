"""``--diffperf-dry-run``: each selected scenario's server command, environment and request, printed; nothing starts.

Each scenario is skipped before its server would be asked for (one that a run fails before judging it, for
want of a case or a baseline scenario, fails here too), its plan attached to the report (so
an xdist worker's plans reach the controller), and the terminal summary prints the plans. Commands
and environments are the pool's own (``ServerPool.plan``): the ports are free ones from this
process's range (an xdist worker's own), the devices its slice.
"""

from __future__ import annotations

import pytest

from ..serving import preview
from ..serving.launchers import ServerSpec
from ..serving.pool import ServerPlan
from .regen import get_regen
from .report import SCENARIO_PROPERTY
from .session import DiffperfSession
from .stash import SCENARIO_KEY

DRY_RUN_PROPERTY = "diffperf_dry_run"  # a scenario's plan, as printed


class DryRun:
    """Registered in every process of a dry run: plans and skips the scenarios; prints the plans at the end."""

    def __init__(self, session: DiffperfSession):
        self.session = session
        self.servers: dict[ServerSpec, str] = {}  # each server this process would start -> its first scenario
        self.plans: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        scenario = item.stash.get(SCENARIO_KEY, None)
        if scenario is None:
            return
        marker = item.get_closest_marker("skip")
        skipped = str(marker.kwargs.get("reason", "")) if marker else None
        item.user_properties.append((DRY_RUN_PROPERTY, "\n".join(self.plan(item, scenario, skipped))))
        if skipped is None and not self.fails(item, scenario):  # a marked scenario is skipped with its own reason
            pytest.skip(f"{scenario}: dry run, nothing started")

    def fails(self, item: pytest.Item, scenario: str) -> bool:
        """Whether a run would fail the scenario before judging anything (no case, or a case without a baseline
        scenario): the dry run fails it too, starting nothing (``ScenarioItem.runtest``)."""
        return scenario not in self.session.cases or self.judged(item, scenario).startswith("fails:")

    def plan(self, item: pytest.Item, scenario: str, skipped: str | None) -> list[str]:
        """The scenario's block: where it would run, its server (or the one it shares), request and judging."""
        session = self.session
        ports = session.devices.ports
        where = f"{session.devices.owner}, ports {ports.start}-{ports.stop - 1}" if ports else session.devices.owner
        title = f"{scenario} ({where})"
        case = session.cases.get(scenario)
        if skipped is not None:
            return [title, f"  not run: {skipped.removeprefix(f'{scenario}: ')}"]
        spec = session.spec(scenario)
        if case is None or spec is None:
            return [title, "  not run: no case definition (a run fails it, naming the case to add)"]
        first = self.servers.setdefault(spec, scenario)
        server: ServerPlan | str = f"of {first}"
        if first == scenario:
            server = session.pool.plan(spec, len(self.servers))
        timeout = case.timeout_s or session.settings.diffperf_request_timeout
        notes = [
            f"requests: {case.perf_warmup_requests} warmup + {case.perf_repeat_requests} measured, {timeout:g} s each",
            f"judged:  {self.judged(item, scenario)}",
        ]
        not_run = (case.model_extra or {}).get("sglang_checks_not_run")
        if not_run:
            notes.append(f"SGLang checks not run: {', '.join(not_run)}")
        return preview.block(title, server, session.launcher.preview(case), notes)

    def judged(self, item: pytest.Item, scenario: str) -> str:
        session, case = self.session, self.session.cases[scenario]
        if get_regen(item.config) is not None:
            verdict = "not judged: its baseline is regenerated"
        elif session.settings.profile is None:
            verdict = "not judged (no --diffperf profile)"
        elif not case.run_perf_check and case.judged_without_perf_check == "nothing":
            verdict = "not judged (run_perf_check false, as its SGLang release judges it)"
        elif scenario not in session.baselines.scenarios:
            verdict = "fails: no baseline scenario (a run prints the baseline to add)"
        elif not case.run_perf_check:
            verdict = f"e2e and load only (run_perf_check false), profile {session.settings.profile}"
        else:
            verdict = f"every check of its baseline, profile {session.settings.profile}"
        compared = session.consistency is not None and case.run_consistency_check
        return verdict + ("; output compared with its ground truth" if compared else "")

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if report.when == "setup" and SCENARIO_PROPERTY in props and DRY_RUN_PROPERTY in props:
            self.plans.append(str(props[DRY_RUN_PROPERTY]))

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.plans:
            return
        terminalreporter.section("diffperf dry run")
        terminalreporter.write_line(f"{len(self.plans)} scenario(s); nothing was started")
        for plan in self.plans:
            terminalreporter.write_line("")
            for line in plan.splitlines():
                terminalreporter.write_line(line)
