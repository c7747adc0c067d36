"""The results file's request rows: one strict, finite model (its server records': ``serving.record``).

Every command that reads a results file (``merge``, ``accept``, ``trend``, ``--diffperf-compare-to``,
``bisect``) reads its rows and servers through these models (``merge.read_results``): an unknown key, a
string or boolean where a number belongs, a NaN, an infinity, a negative time or a figure over the baseline
files' cap is one error naming the file and the key, never a figure carried into a baseline or a chart.
The run builds its rows and records as these models where it measures them (``judging.verdict.request_rows``;
a server's record where it starts, ``serving.record``), so what it writes is what a reader accepts.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from .._util.records import EXACT, Count, Record
from ..perf.schema import MAX_VALUE
from ..verdicts.vocab import Side

Figure = Annotated[float, Field(ge=0, le=MAX_VALUE)]  # ms or MiB, as a baseline file may hold it
StepKey = Annotated[str, StringConstraints(pattern=r"^\d+$")]


class MemoryFigures(BaseModel):
    """One memory snapshot of a request, in MiB (SGLang's perf-log keys; device fields are 0 on CPU)."""

    model_config = EXACT

    allocated_mb: Figure = 0.0
    reserved_mb: Figure = 0.0
    peak_allocated_mb: Figure = 0.0
    peak_reserved_mb: Figure = 0.0
    peak_host_anon_mb: Figure = 0.0


class RequestRow(Record):
    """One measured request (``judging.verdict.request_rows`` builds it); an A/B run's rows name their side."""

    side: Side | None = None
    process_pair: Count | None = None
    scenario: str
    request: Count | None = None
    request_id: str | None = None
    e2e_ms: Figure
    client_ms: Figure | None = None
    cpu_ms: Figure | None = None  # the server's processes' CPU time over the request, children included
    wait_ms: Figure | None = None  # their threads' time waiting for a CPU over the request (Linux's schedstat)
    load_ms: Figure | None = None  # the load of the server that served it
    avg_step_ms: Figure | None = None
    median_step_ms: Figure | None = None
    stages_ms: dict[str, Figure] = Field(default_factory=dict)
    sampled_steps_ms: dict[StepKey, Figure] = Field(default_factory=dict)
    steps_ms: list[Figure] = Field(default_factory=list)
    memory_mb: dict[str, MemoryFigures] = Field(default_factory=dict)
