"""Request rows are built as the results file's strict models where they are measured, and written back as made."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from pytest_diffperf.cases import Case
from pytest_diffperf.judging.verdict import measurement_of, request_rows
from pytest_diffperf.protocol import MemorySnapshot, PerfRecord, StageRecord
from pytest_diffperf.results.model import ScenarioResult
from pytest_diffperf.results.rows import RequestRow
from pytest_diffperf.serving.client import Output
from pytest_diffperf.serving.measure import Sample
from pytest_diffperf.serving.record import ServerRecord

CASE = Case.model_validate({"id": "tiny", "model": "tiny/flux-t2i", "task": "text-to-image", "prompt": "a cat"})
STATIC_KEYS = [
    "scenario", "request", "request_id", "e2e_ms", "client_ms", "cpu_ms", "wait_ms", "load_ms", "avg_step_ms",
    "median_step_ms", "stages_ms", "sampled_steps_ms", "steps_ms", "memory_mb",
]  # fmt: skip


def samples(e2e_ms: float = 120.0) -> list[Sample]:
    records = [
        PerfRecord(
            request_id=f"r{i}",
            stages=[StageRecord(name="DenoisingStage", execution_time_ms=80.0)],
            steps=[20.0, 20.0, 21.0, 19.0],
            total_duration_ms=e2e_ms,
            memory_snapshots={"runtime_peak": MemorySnapshot(peak_host_anon_mb=500.0)},
        )
        for i in range(2)
    ]
    return [Sample(i, Output(r.request_id, "image", b"", "png"), r, 130.456) for i, r in enumerate(records)]


def rows(pair: tuple[str, int] | None = None, e2e_ms: float = 120.0) -> list[RequestRow]:
    measured = samples(e2e_ms)
    return request_rows("tiny", measured, measurement_of(measured, CASE, 900.0), (0.0, 1.0), pair)  # type: ignore[arg-type]


def test_a_static_rows_keys_are_the_results_files_and_name_no_side():
    row = rows()[1]
    assert isinstance(row, RequestRow)
    assert list(row.model_dump()) == STATIC_KEYS
    assert (row.request, row.request_id, row.e2e_ms, row.client_ms, row.load_ms) == (1, "r1", 120.0, 130.46, 900.0)
    assert row.sampled_steps_ms == {"0": 20.0, "3": 19.0}
    assert row.memory_mb["runtime_peak"].peak_host_anon_mb == 500.0


def test_an_a_b_row_names_its_side_and_process_pair_first():
    row = rows(("candidate", 2))[0]
    assert list(row.model_dump())[:3] == ["side", "process_pair", "scenario"]
    assert (row.side, row.process_pair) == ("candidate", 2)


@pytest.mark.parametrize("e2e_ms", [math.nan, math.inf, -1.0])
def test_a_figure_no_reader_accepts_is_refused_where_it_is_measured(e2e_ms):
    with pytest.raises(ValidationError, match="e2e_ms"):
        rows(e2e_ms=e2e_ms)


def test_a_result_carries_typed_rows_and_servers_through_json_unchanged():
    server = ServerRecord(pid=7, port=30000, log="server.log", load_ms=900.0)
    result = ScenarioResult(scenario="tiny", verdict="pass", rows=rows(), server=server)
    again = ScenarioResult.model_validate_json(result.model_dump_json())
    assert again.rows == result.rows and again.server == server
    assert list(again.model_dump()["server"]) == ["pid", "port", "load_ms", "log"]  # as made: no unset keys
    with pytest.raises(ValidationError, match=r"rows\.0\.e2e_ms"):
        result.rows = [{"scenario": "tiny", "e2e_ms": "120"}]  # type: ignore[list-item]
