"""JUnit XML (``--junitxml``): a few numbers per scenario, the run's provenance, and the full result as an
attachment file, valid against the schema of pytest's ``junit_family``.

Each scenario's full result goes to ``<xml stem>-diffperf/<scenario>.json`` next to the XML, named
in the test case's ``system-out`` as ``[[ATTACHMENT|<absolute path>]]`` (the convention Jenkins'
and GitLab's JUnit readers take attachments from). The numbers: the outcome, the judged e2e, its
expected value and change (an A/B run's: the verdict's paired estimate), the load time. An inconclusive
scenario that did not fail the run is a ``<skipped type="diffperf.inconclusive">`` test case with its
verdict as the message, so a dashboard does not show it as a pass. xunit2 (pytest's default family) allows properties only
on the test suite, so there they are named per scenario (``diffperf_e2e_ms[flux_tiny_t2i]``); with
``junit_family=xunit1`` they are the test case's own (``diffperf_e2e_ms``). The provenance is on
the test suite in both (``diffperf_commit``, ``diffperf_device``, ...).

The plugin keeps a scenario's result in the test's user properties (that is how it travels from
an xdist worker); pytest writes a teardown report's user properties into the XML, so this
plugin gives the teardown report the JUnit properties instead, before pytest's writer reads them.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .._util.atomicfile import write_atomic
from ..results.model import InterferenceWindowRecord, ScenarioResult
from ..results.tables import e2e_change, reason
from .report import RESULT_PROPERTY, SCENARIO_PROPERTY, ResultsCollector
from .stash import get_session

ATTACHMENT = "[[ATTACHMENT|{path}]]"


def junit_numbers(result: ScenarioResult) -> list[tuple[str, str]]:
    """The few numbers JUnit carries for a scenario: (name, value), unset ones left out; an A/B run's figures
    (``results.ab.measured``: the ratio, its interval, the cost) too."""
    e2e = result.check("e2e")
    actual = result.measured.get("e2e_ms", e2e.actual if e2e is not None else None)
    values: list[tuple[str, object]] = [
        ("outcome", result.outcome),
        ("verdict", result.verdict),
        ("e2e_ms", actual),
        ("expected_e2e_ms", e2e.expected if e2e is not None else None),
        ("e2e_change", round(c, 4) if (c := e2e_change(result)) is not None else None),
        ("load_ms", result.measured.get("load_ms")),
        ("consistency", result.consistency_status),
        ("outside_cpu_share", peak.cpu_share if (peak := _busiest(result)) is not None else None),  # interference
    ]
    if result.ab is not None:
        values += [(name, value) for name, value in result.measured.items() if name not in dict(values)]
    return [(f"diffperf_{name}", str(value)) for name, value in values if value is not None]


def _busiest(result: ScenarioResult) -> InterferenceWindowRecord | None:
    return result.interference.peak if result.interference is not None else None


class JUnitResults:
    def __init__(self, config: pytest.Config, xml: Any):
        self.config = config
        self.xml = xml  # pytest's LogXML
        self.folder = Path(xml.logfile).with_name(Path(xml.logfile).stem + "-diffperf")
        self.family = str(getattr(xml, "family", "xunit2"))

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        diffperf_session = get_session(self.config)
        collector = self._collector()
        if diffperf_session is None or collector is None:
            return
        for name, value in collector.provenance(diffperf_session).pairs():
            self.xml.add_global_property(f"diffperf_{name}", value)
        if collector.json_path is not None:
            self.xml.add_global_property("diffperf_results", str(collector.json_path))

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> Generator[None, None, None]:
        props = dict(report.user_properties)
        if report.when == "teardown" and SCENARIO_PROPERTY in props:
            report.user_properties = self._properties(report, props)  # a new list: the other reports keep theirs
        outcome = yield
        if report.when == "call" and report.passed and props.get("diffperf_outcome") == "inconclusive":
            self._skipped(report, props)
        return outcome

    def _skipped(self, report: pytest.TestReport, props: dict[str, object]) -> None:
        """An inconclusive scenario that did not fail the run is a skipped test case, the verdict its message (a
        dashboard does not show it green); counted as skipped, not passed."""
        result = ScenarioResult.model_validate_json(str(props[RESULT_PROPERTY])) if RESULT_PROPERTY in props else None
        message = reason(result) if result is not None else "inconclusive"
        node = ET.Element("skipped", type="diffperf.inconclusive", message=message)
        node.text = result.message if result is not None else message
        self.xml.node_reporter(report).append(node)
        self.xml.stats["passed"] -= 1  # pytest's writer counted the passed report

    def _properties(self, report: pytest.TestReport, props: dict[str, object]) -> list[tuple[str, object]]:
        collector = self._collector()
        result = (
            ScenarioResult.model_validate_json(str(props[RESULT_PROPERTY]))
            if RESULT_PROPERTY in props
            else (collector.results.get(report.nodeid) if collector is not None else None)
        )
        if result is None:
            return []
        path = self._attach(report.nodeid, result)
        out = self.xml.node_reporter(report)
        node = ET.Element("system-out")
        node.text = ATTACHMENT.format(path=path) + "\n"
        out.append(node)
        numbers = [*junit_numbers(result), ("diffperf_result", str(path))]
        if self.family == "xunit1":
            return list(numbers)
        for name, value in numbers:
            self.xml.add_global_property(f"{name}[{result.scenario}]", value)
        return []

    def _attach(self, nodeid: str, result: ScenarioResult) -> Path:
        name = re.sub(r"[^A-Za-z0-9._-]", "_", nodeid.rsplit("::", 1)[-1]) + ".json"
        path = (self.folder / name).resolve()
        write_atomic(path, json.dumps(result.document(), indent=2) + "\n")
        return path

    def _collector(self) -> ResultsCollector | None:
        plugin = self.config.pluginmanager.get_plugin("diffperf-results")
        return plugin if isinstance(plugin, ResultsCollector) else None


def register(config: pytest.Config) -> None:
    """Register the JUnit adapter when pytest writes JUnit XML in this process (the controller under xdist)."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover (pytest >= 8 has it)
        return
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        config.pluginmanager.register(JUnitResults(config, xml), "diffperf-junit")
