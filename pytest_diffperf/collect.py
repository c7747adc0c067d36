"""Collection: a baseline file becomes one pytest item per scenario (node id ``<file>::<scenario>``)."""

from __future__ import annotations

import time
import warnings

import pytest

from .client import RequestError
from .perflog import PerfLogError
from .regenrun import get_regen
from .report import RESULT_PROPERTY, SCENARIO_PROPERTY
from .runner import measure
from .scenario import (
    ScenarioFailure,
    ScenarioResult,
    judge,
    measurement_of,
    missing_baseline_message,
    missing_case_message,
    request_rows,
)
from .server import ServerError, ServerProcess
from .session import DiffperfSession, get_session

PLAIN_FAILURES = (ScenarioFailure, ServerError, RequestError, PerfLogError)


class UnguardedWarning(UserWarning):
    """A scenario whose baseline guards nothing (expected e2e of 0)."""


class BaselineFile(pytest.File):
    def collect(self):
        ds = _session(self.config)
        for scenario_id in ds.scenario_ids():
            yield ScenarioItem.from_parent(self, name=scenario_id)


class ScenarioItem(pytest.Item):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        ds = _session(self.config)
        self.case = ds.cases.get(self.name)
        self.scenario = ds.baselines.scenarios.get(self.name)
        self.spec = ds.spec(self.name)
        self.server: ServerProcess | None = None
        self.user_properties.append((SCENARIO_PROPERTY, self.name))
        if self.spec is not None:
            self.add_marker(pytest.mark.xdist_group(self.spec.key))

    def setup(self) -> None:
        if self.spec is not None and self.case is not None and self.case.run_perf_check:
            self.server = _session(self.config).pool.get(self.spec)

    def runtest(self) -> None:
        ds = _session(self.config)
        source = str(ds.baselines.source.get(self.name, ds.baselines.primary))
        if self.case is None:
            self._finish(ScenarioResult(self.name, "fail", message=missing_case_message(self.name, source, _path(ds))))
        if not self.case.run_perf_check:
            pytest.skip(f"{self.name}: run_perf_check is false")
        assert self.server is not None
        timeout = self.case.timeout_s or ds.settings.diffperf_request_timeout
        started = time.monotonic()
        samples = measure(self.server, ds.launcher, self.case, timeout)
        measurement = measurement_of(samples, self.case, self.server.load_ms)
        regen = get_regen(self.config)
        if regen is not None:
            self._finish(regen.regenerate(self, samples, measurement, time.monotonic() - started))
            return
        if self.scenario is None:
            message = missing_baseline_message(self.name, str(ds.baselines.primary), measurement)
            self._finish(ScenarioResult(self.name, "fail", message=message))
        result = judge(
            self.name,
            self.scenario,
            measurement,
            ds.baselines.profile(ds.settings.profile),
            ds.preset,
            ds.baselines.step_fractions,
        )
        result.rows = request_rows(self.name, samples, measurement, ds.baselines.step_fractions)
        result.server = self.server.info()
        self._finish(result)

    def _finish(self, result: ScenarioResult) -> None:
        self.user_properties.append((RESULT_PROPERTY, result.to_json()))
        for row in result.rows[:1]:
            for key in ("e2e_ms", "load_ms", "avg_step_ms", "median_step_ms"):
                self.user_properties.append((f"diffperf_{key}", row[key]))
        self.user_properties.append(("diffperf_verdict", result.verdict))
        if result.verdict == "fail":
            tail = f"\n\n{self.server.log_section()}" if self.server else ""
            raise ScenarioFailure(result.message + tail)
        if result.verdict == "unguarded":
            warnings.warn(UnguardedWarning(f"{self.name}: {result.message}"), stacklevel=1)

    def reportinfo(self):
        return self.path, 0, f"diffperf scenario {self.name}"  # a line number: skip marks report the item location


def plain_longrepr(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """The message alone, without a traceback, for a scenario's own kinds of failure."""
    if not isinstance(item, ScenarioItem):
        return None
    if isinstance(excinfo.value, PLAIN_FAILURES):
        return str(excinfo.value)
    if isinstance(excinfo.value, TimeoutError):
        return f"{item.name}: {excinfo.value}"
    return None


def _session(config: pytest.Config) -> DiffperfSession:
    ds = get_session(config)
    assert ds is not None, "diffperf items exist only while the plugin is active"
    return ds


def _path(ds: DiffperfSession) -> str | None:
    return str(ds.settings.diffperf_cases) if ds.settings.diffperf_cases else None
