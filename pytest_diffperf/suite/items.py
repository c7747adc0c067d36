"""Collection and running: a baseline file becomes one pytest item per scenario (``<file>::<scenario>``).

An item gets its server from the session's pool, measures its case, judges (or regenerates) the
performance and compares the output, and reports one ``ScenarioResult`` through its user properties.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..errors import DiffperfError, DiffperfFailure
from ..judging.interference import interference_record, measured_busy
from ..judging.noisy import pooled
from ..judging.staticscenario import Attempt, StaticScenario, StaticServers, judge_static
from ..judging.verdict import (
    ScenarioFailure,
    judged_values,
    measurement_of,
    missing_baseline_message,
    missing_case_message,
    request_rows,
)
from ..results.model import MeasurementRecord, ScenarioResult, fails_run
from ..serving.client import Output
from ..serving.interference import Meter
from ..serving.measure import measure
from ..serving.process import ServerProcess
from .consistency import check_case_output
from .regen import REGEN_PROPERTY, get_regen
from .report import RESULT_PROPERTY, SCENARIO_PROPERTY, SERVER_PROPERTY, SERVERS_PROPERTY
from .session import DiffperfSession
from .stash import SCENARIO_KEY, get_session
from .verdictsettings import ABRun


class UnguardedWarning(UserWarning):
    """A scenario whose baseline guards nothing (expected e2e of 0)."""


def collection_args(config: pytest.Config, session: DiffperfSession) -> list[str]:
    """What pytest collects: without paths given, the files the scenarios live in (not the test files); with
    paths, also the scenarios' other files (an NPU/MUSA fragment) beside a path that holds the platform file."""
    files = session.scenarios.files or [session.baselines.primary]
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return [str(f) for f in files]
    covers = [(config.invocation_params.dir / arg).resolve() for arg in config.args if "::" not in arg]

    def collected(path: Path) -> bool:
        return any(path == g or g in path.parents for g in covers)

    if not collected(session.baselines.primary):
        return config.args
    return config.args + [str(f) for f in files if not collected(f)]


class BaselineFile(pytest.File):
    def collect(self) -> Iterator[ScenarioItem]:
        scenarios = _session(self.config).scenarios
        for scenario_id in scenarios.ids:
            if scenarios.home(scenario_id) == self.path:
                yield ScenarioItem.from_parent(self, name=scenario_id)


class ScenarioItem(pytest.Item):
    """One scenario as a pytest test: pytest glue, no judging of its own.

    It owns the scenario's place in pytest (skip marks, the server it gets from the session's pool in ``setup``,
    its user properties: result, servers, regeneration record) and the first measurement; the measure-until-
    decisive loops are ``judging.staticscenario.judge_static`` (static) and ``judging.abscenario.GroupAB`` (A/B),
    the output comparison ``suite/consistency.py``, the outcome ``results.model``.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        session = _session(self.config)
        self.case = session.cases.get(self.name)
        self.baseline = session.baselines.scenarios.get(self.name)
        self.spec = session.spec(self.name)
        self.server: ServerProcess | None = None
        self.meter: Meter | None = None  # from before the server is got until the requests end
        self._first_start: int | None = None  # the pool's first start made for this scenario (None: none asked)
        self.stash[SCENARIO_KEY] = self.name
        self.user_properties.append((SCENARIO_PROPERTY, self.name))
        reason = session.not_expressible.get(self.name) if self.case is None else None
        if reason:
            self.add_marker(pytest.mark.skip(reason=f"{self.name}: {reason}"))

    def setup(self) -> None:
        if self._ab() is not None or _session(self.config).settings.diffperf_dry_run:
            return  # an A/B run starts its own server pairs; a dry run none
        if self.spec is not None and self.case is not None:
            session = _session(self.config)
            pool = session.pool
            self._first_start = len(pool.launches)
            self.meter = session.interference.meter(self.spec.num_gpus)
            try:
                self.server = pool.get(self.spec)
            except DiffperfFailure:
                start = pool.last_start(self.spec)
                if start is not None:
                    self.user_properties.append((SERVER_PROPERTY, start.record().model_dump_json()))
                raise
            finally:
                self._record_starts()

    def _record_starts(self) -> None:
        """Every server this scenario started (port retries and re-measures included, failed starts too), for the
        results file's ``servers``: a property the collector gathers from every report (xdist-safe)."""
        if self._first_start is None:
            return
        starts = _session(self.config).pool.started_since(self._first_start)
        self.user_properties.append((SERVERS_PROPERTY, json.dumps([s.model_dump() for s in starts])))

    def _compares(self) -> bool:
        return _session(self.config).consistency is not None and bool(self.case and self.case.run_consistency_check)

    def runtest(self) -> None:
        session = _session(self.config)
        if self.case is None:
            source = str(session.baselines.source.get(self.name, session.baselines.primary))
            cases = str(session.settings.diffperf_cases) if session.settings.diffperf_cases else None
            result = ScenarioResult(
                scenario=self.name, verdict="fail", message=missing_case_message(self.name, source, cases)
            )
            self._report(result)
            raise ScenarioFailure(result.message)
        if session.settings.diffperf_dry_run:  # a case without a baseline scenario (suite.dryrun): as a run ends
            message = (
                f"case {self.name!r} has no baseline scenario in {session.baselines.primary}: a run measures it "
                "and fails, printing the baseline to add (pytest --regen-baselines -k ID writes it)"
            )
            self._report(ScenarioResult(scenario=self.name, verdict="fail", message=message))
            raise ScenarioFailure(message)
        ab = self._ab()
        if ab is not None:
            self._run_ab(session, ab)
            return
        assert self.server is not None
        assert self.meter is not None
        timeout = self._timeout(session)
        started = time.monotonic()
        try:
            samples = measure(self.server, session.launcher, self.case, timeout)
            measurement = measurement_of(samples, self.case, self.server.load_ms)
            first = Attempt(samples, measurement, self.meter.stop())
            result = self._perf(session, first, time.monotonic() - started)
        except DiffperfFailure:
            if self.server is not None:  # the server that failed: for the results file
                self.user_properties.append((SERVER_PROPERTY, self.server.record().model_dump_json()))
            raise
        finally:
            self._record_starts()
        messages = self._judged(session, result, samples[0].output)
        if messages:
            raise ScenarioFailure("\n\n".join(messages) + f"\n\n{self.server.log_section()}")
        if result.verdict == "unguarded":
            warnings.warn(UnguardedWarning(f"{self.name}: {result.message}"), stacklevel=1)

    def _perf(self, session: DiffperfSession, first: Attempt, measure_s: float) -> ScenarioResult:
        """Regenerated (regeneration run), unjudged (no profile), failed for want of a baseline, or judged by
        the limit engine (e2e and load alone with run_perf_check false, as SGLang); with the rows (each request's
        own server load), what a baseline entry needs besides them, the server, and what other processes took."""
        assert self.case is not None
        assert self.server is not None
        assert self.spec is not None
        start_share = session.start_share(self.name, self.server.ready_s)
        used, attempts, effect, waited = [first], [first], None, 0.0
        regen = get_regen(self.config)
        if regen is not None:
            busy = measured_busy(interference_record([first.window], session.interference.policy))
            result, record = regen.regenerate(self.name, first.measurement, measure_s + start_share, busy)
            self.user_properties.append((REGEN_PROPERTY, json.dumps(record)))
        elif session.settings.profile is None:
            result = ScenarioResult(scenario=self.name, verdict="unjudged", message="performance not judged")
        elif not self.case.run_perf_check and self.case.judged_without_perf_check == "nothing":
            message = "performance not judged: run_perf_check false, as SGLang's release of this case judges it"
            result = ScenarioResult(scenario=self.name, verdict="unjudged", message=message)
        elif self.baseline is None:
            message = missing_baseline_message(self.name, str(session.baselines.primary), first.measurement)
            result = ScenarioResult(scenario=self.name, verdict="fail", message=message)
        else:
            assert session.rules is not None
            scenario = StaticScenario(self.name, self.case, self.baseline, session.rules, session.static_policy)
            servers = StaticServers(
                session.pool, self.spec, session.launcher, session.interference, self.case, self._timeout(session),
                self.server,
            )  # fmt: skip
            try:
                judged = judge_static(scenario, servers, first, measure_s)
            finally:
                self.server = servers.server
            result, used, attempts, effect, waited = (
                judged.result, judged.used, judged.attempts, judged.effect, judged.waited_s
            )  # fmt: skip
        step_fractions = session.baselines.step_fractions
        result.rows = [row for a in used for row in request_rows(self.name, a.samples, a.measurement, step_fractions)]
        result.measured = judged_values(pooled([a.measurement for a in used]), session.preset)
        result.measurement = MeasurementRecord(
            num_frames=self.case.num_frames, is_video=self.case.is_video, wall_s=round(measure_s, 3),
            start_share_s=round(start_share, 3),
        )  # fmt: skip
        result.server = self.server.record()
        policy = session.interference.policy
        result.interference = interference_record([a.window for a in attempts], policy, effect, waited)
        return result

    def _ab(self) -> ABRun | None:
        """The run's A/B settings when this scenario is judged A/B (its performance is checked)."""
        ab = _session(self.config).ab
        return ab if ab is not None and self.case is not None and self.case.run_perf_check else None

    def _run_ab(self, session: DiffperfSession, ab: ABRun) -> None:
        """Judge the scenario A/B (``judging.abscenario``) on its server group's process pairs (or, with
        ``--diffperf-ab-pairs scenario``, pairs of its own), compare the candidate's output, report."""
        assert self.case is not None
        assert self.spec is not None
        assert session.rules is not None
        members = [self] if ab.sharing == "scenario" else self._group_members()
        key = self.spec.key if ab.sharing == "group" else self.name
        group = ab.group(key, self.spec, [(m.name, m.case, m._timeout(session)) for m in members if m.case])
        judged = group.judge(self.name, session.rules)
        messages = self._judged(session, judged.result, judged.output)
        if messages:
            assert judged.result.ab is not None
            servers = judged.result.ab.servers
            logs = "\n".join(f"{s.side} server {(s.process_pair or 0) + 1}: {s.log}" for s in servers)
            raise ScenarioFailure("\n\n".join(messages) + f"\n\nserver logs:\n{logs}")

    def _timeout(self, session: DiffperfSession) -> float:
        assert self.case is not None
        return self.case.timeout_s or session.settings.diffperf_request_timeout

    def _group_members(self) -> list[ScenarioItem]:
        """The scenarios of this item's server group that this process runs A/B (not skipped), in run order."""
        return [
            item
            for item in self.session.items
            if isinstance(item, ScenarioItem)
            and item.spec == self.spec
            and item._ab() is not None
            and item.get_closest_marker("skip") is None
        ]

    def _judged(self, session: DiffperfSession, result: ScenarioResult, output: Output | None) -> list[str]:
        """Compare the output with ground truth where the case asks, report the result; the messages the
        test fails with (none: it passes)."""
        failure = None
        if self._compares() and output is not None:
            assert self.case is not None
            assert session.consistency is not None
            assert session.thresholds is not None
            result.consistency, failure = check_case_output(self.case, output, session.consistency, session.thresholds)
        self._report(result)
        messages = [result.message] if fails_run(result.verdict, session.inconclusive) else []
        return messages + ([str(failure)] if failure else [])

    def _report(self, result: ScenarioResult) -> None:
        """The result for the collector (the whole of it) and for JUnit (the judged numbers, the outcome)."""
        self.user_properties.append((RESULT_PROPERTY, result.model_dump_json()))
        for key, value in result.measured.items():
            self.user_properties.append((f"diffperf_{key}", value))
        self.user_properties.append(("diffperf_verdict", result.verdict))
        self.user_properties.append(("diffperf_outcome", result.outcome))
        if result.consistency is not None:
            self.user_properties.append(("diffperf_consistency", json.dumps(result.consistency)))

    def reportinfo(self) -> tuple[Any, int, str]:
        return self.path, 0, f"diffperf scenario {self.name}"  # a line number: skip marks report the item location


def plain_longrepr(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """The message alone, without a traceback, for a scenario's own kinds of failure."""
    if not isinstance(item, ScenarioItem):
        return None
    if isinstance(excinfo.value, (DiffperfFailure, DiffperfError)):
        return str(excinfo.value)
    if isinstance(excinfo.value, TimeoutError):
        return f"{item.name}: {excinfo.value}"
    return None


def _session(config: pytest.Config) -> DiffperfSession:
    session = get_session(config)
    assert session is not None, "diffperf items exist only while the plugin is active"
    return session
