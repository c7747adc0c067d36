"""Collection: a baseline file becomes one pytest item per scenario (node id ``<file>::<scenario>``)."""

from __future__ import annotations

import json
import time
import warnings

import pytest

from .errors import DiffperfFailure
from .outputcheck import compare
from .regenreport import REGEN_PROPERTY
from .regenrun import get_regen
from .report import RESULT_PROPERTY, SCENARIO_PROPERTY
from .serving.measure import measure
from .results.model import ScenarioResult
from .results.verdict import ScenarioFailure, judge_scenario, judged_values, measurement_of, missing_baseline_message, missing_case_message, request_rows
from .serving.process import ServerProcess
from .session import DiffperfSession, get_session



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
        if self.spec is not None and self.case is not None and (self.case.run_perf_check or self._compares()):
            self.server = _session(self.config).pool.get(self.spec)

    def _compares(self) -> bool:
        return _session(self.config).consistency is not None and bool(self.case and self.case.run_consistency_check)

    def runtest(self) -> None:
        ds = _session(self.config)
        source = str(ds.baselines.source.get(self.name, ds.baselines.primary))
        if self.case is None:
            self._finish(ScenarioResult(scenario=self.name, verdict="fail", message=missing_case_message(self.name, source, _path(ds))))
        if self.server is None:
            pytest.skip(f"{self.name}: run_perf_check is false and its output is not compared")
        timeout = self.case.timeout_s or ds.settings.diffperf_request_timeout
        started = time.monotonic()
        samples = measure(self.server, ds.launcher, self.case, timeout)
        measurement = measurement_of(samples, self.case, self.server.load_ms)
        result = self._perf(ds, samples, measurement, time.monotonic() - started)
        failure = None
        if self._compares():
            assert ds.consistency is not None and ds.thresholds is not None
            result.consistency, failure = compare(self.case, samples[0].output, ds.consistency, ds.thresholds)
        self._finish(result, failure)

    def _perf(self, ds: DiffperfSession, samples, measurement, measure_s: float) -> ScenarioResult:
        """Regenerated, not judged, missing its baseline, or judged by the limit engine."""
        regen = get_regen(self.config)
        if regen is not None:
            assert self.server is not None and self.spec is not None
            result, record = regen.regenerate(self.name, self.spec.key, self.server.ready_s, measurement, measure_s)
            self.user_properties.append((REGEN_PROPERTY, json.dumps(record)))
        elif ds.settings.profile is None or not self.case.run_perf_check:
            result = ScenarioResult(scenario=self.name, verdict="unjudged", message="performance not judged")
        elif self.scenario is None:
            message = missing_baseline_message(self.name, str(ds.baselines.primary), measurement)
            return ScenarioResult(scenario=self.name, verdict="fail", message=message)
        else:
            tolerances = ds.baselines.profile(ds.settings.profile)
            step_fractions = ds.baselines.step_fractions
            result = judge_scenario(self.name, self.scenario, measurement, tolerances, ds.preset, step_fractions)
        result.rows = request_rows(self.name, samples, measurement, ds.baselines.step_fractions)
        result.measured = judged_values(measurement, ds.preset)
        result.server = self.server.info()
        return result

    def _finish(self, result: ScenarioResult, consistency_failure: Exception | None = None) -> None:
        self.user_properties.append((RESULT_PROPERTY, result.model_dump_json()))
        for key, value in result.measured.items():
            self.user_properties.append((f"diffperf_{key}", value))
        self.user_properties.append(("diffperf_verdict", result.verdict))
        self.user_properties.append(("diffperf_outcome", result.outcome))
        if result.consistency is not None:
            self.user_properties.append(("diffperf_consistency", json.dumps(result.consistency)))
        messages = [result.message] if result.verdict == "fail" else []
        messages += [str(consistency_failure)] if consistency_failure else []
        if messages:
            tail = f"\n\n{self.server.log_section()}" if self.server else ""
            raise ScenarioFailure("\n\n".join(messages) + tail)
        if result.verdict == "unguarded":
            warnings.warn(UnguardedWarning(f"{self.name}: {result.message}"), stacklevel=1)

    def reportinfo(self):
        return self.path, 0, f"diffperf scenario {self.name}"  # a line number: skip marks report the item location


def plain_longrepr(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    """The message alone, without a traceback, for a scenario's own kinds of failure."""
    if not isinstance(item, ScenarioItem):
        return None
    if isinstance(excinfo.value, DiffperfFailure):
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
