"""A baseline entry carries the server's CPU time and wait for a CPU of the request its figures came from (the
median-e2e one), built from samples (--regen-baselines) and from a results file's rows (diffperf accept) alike."""

from __future__ import annotations

from pytest_diffperf.cases import Case
from pytest_diffperf.judging.verdict import measurement_of, request_rows
from pytest_diffperf.perf.entry import entry_from_measurement
from pytest_diffperf.perf.schema import ScenarioBaseline
from pytest_diffperf.protocol import PerfRecord, StageRecord
from pytest_diffperf.results.entries import measured_entry
from pytest_diffperf.results.model import MeasurementRecord, ScenarioResult
from pytest_diffperf.serving.client import Output
from pytest_diffperf.serving.measure import Sample

CASE = Case.model_validate({"id": "tiny", "model": "tiny/flux-t2i", "task": "text-to-image", "prompt": "a cat"})


def samples(*requests: tuple[float, float | None, float | None]) -> list[Sample]:
    """One sample per (e2e ms, server CPU ms, wait ms)."""
    out = []
    for i, (e2e, cpu, wait) in enumerate(requests):
        record = PerfRecord(
            request_id=f"r{i}",
            stages=[StageRecord(name="DenoisingStage", execution_time_ms=e2e / 2)],
            steps=[e2e / 4, e2e / 4],
            total_duration_ms=e2e,
        )
        out.append(Sample(i, Output(record.request_id, "image", b"", "png"), record, e2e + 5, cpu, wait))
    return out


# the median e2e is the second request's: its CPU time and wait, not the median CPU time or wait
MEASURED = ((500.0, 170.0, 20.0), (509.0, 180.0, 300.0), (900.0, 400.0, 900.0))


def test_the_entry_holds_the_median_e2e_request_s_cpu_time_and_wait():
    entry = entry_from_measurement(measurement_of(samples(*MEASURED), CASE, 900.0))
    assert entry["expected_e2e_ms"] == 509.0
    assert entry["request_cpu"] == {"cpu_ms": 180.0, "wait_ms": 300.0}
    assert ScenarioBaseline.model_validate(entry).own_wait == (180.0, 300.0)


def test_without_the_wait_read_the_entry_has_none():
    no_wait = [(e2e, cpu, None) for e2e, cpu, _ in MEASURED]
    entry = entry_from_measurement(measurement_of(samples(*no_wait), CASE, 900.0))
    assert "request_cpu" not in entry
    assert ScenarioBaseline.model_validate(entry).own_wait is None


def test_accept_builds_the_same_entry_from_the_results_rows():
    measured = samples(*MEASURED)
    measurement = measurement_of(measured, CASE, 900.0)
    rows = request_rows("tiny", measured, measurement, (0.0, 1.0))
    result = ScenarioResult(scenario="tiny", verdict="pass", measurement=MeasurementRecord())
    assert measured_entry(result, rows) == entry_from_measurement(measurement)
