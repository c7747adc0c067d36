"""A scenario result's baseline entry: its measurement rebuilt from the request rows of a results file, built
by ``perf.entry`` exactly as ``--regen-baselines`` builds it (every figure from the median-e2e request).

Rows are read back as the perf records they were made from (stages, steps, memory snapshots), with
their server CPU time and wait for a CPU, each with its own server's load (a re-measured scenario's rows come from several servers).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from .._util.jsonfile import validate
from ..errors import DiffperfError
from ..perf.entry import entry_from_measurement
from ..perf.measurement import Measurement
from ..protocol import MemorySnapshot, PerfRecord, StageRecord
from .model import ScenarioResult
from .rows import RequestRow

ENTRY_KEYS = ("stages_ms", "steps_ms")


def perf_record(row: RequestRow, index: int) -> PerfRecord:
    """A request row read back as the perf record it was made from."""
    return PerfRecord(
        request_id=str(index),
        stages=[StageRecord(name=name, execution_time_ms=ms) for name, ms in row.stages_ms.items()],
        steps=row.steps_ms,
        total_duration_ms=row.e2e_ms,
        memory_snapshots={k: MemorySnapshot(**v.model_dump()) for k, v in row.memory_mb.items()},
    )


def rows_of(doc: dict[str, Any], path: Path) -> dict[str, list[RequestRow]]:
    """Each scenario's request rows of a (merged) results document, with the figures an entry is built from;
    ``path`` names it in errors."""
    out: dict[str, list[RequestRow]] = {}
    rows = doc.get("rows") or []
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        parsed = validate(RequestRow, row, path, f"rows.{i}")
        for key in ENTRY_KEYS:
            if key not in parsed.model_fields_set:
                raise DiffperfError("required key is missing (a baseline entry is built from it)", source=str(path),
                                    key=f"rows.{i}.{key}")  # fmt: skip
        out.setdefault(parsed.scenario, []).append(parsed)
    return out


def measured_entry(result: ScenarioResult, rows: list[RequestRow], side: str | None = None) -> dict[str, Any]:
    """The baseline entry ``result``'s requests (of one A/B ``side``) measured; DiffperfError without any."""
    mine = [r for r in rows if r.side == side]
    if not mine or result.measurement is None:
        raise DiffperfError("no measured requests")
    info = result.measurement
    measurement = Measurement.from_records(
        [perf_record(r, i) for i, r in enumerate(mine)], num_frames=info.num_frames, is_video=info.is_video
    )
    measurement = replace(measurement, cpu_ms=[r.cpu_ms for r in mine], wait_ms=[r.wait_ms for r in mine])
    loads = [r.load_ms for r in mine]
    if all(ms is not None for ms in loads):
        measurement = replace(measurement, load_ms=[float(ms) for ms in loads if ms is not None])
    wall = None if info.wall_s is None or side is not None else info.wall_s + (info.start_share_s or 0.0)
    return entry_from_measurement(measurement, full_test_time_s=wall)
