"""The results file's request rows and server records: one strict, finite model of each.

Every command that reads a results file (``merge``, ``accept``, ``trend``, ``--diffperf-compare-to``,
``bisect``) reads its rows and servers through these models (``merge.read_results``): an unknown key, a
string or boolean where a number belongs, a NaN, an infinity, a negative time or a figure over the baseline
files' cap is one error naming the file and the key, never a figure carried into a baseline or a chart.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..perf.schema import MAX_VALUE

# Unknown keys refused, types exact (no "2532.2" or true read as a number), numbers finite.
EXACT = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

Figure = Annotated[float, Field(ge=0, le=MAX_VALUE)]  # ms or MiB, as a baseline file may hold it
Count = Annotated[int, Field(ge=0)]
StepKey = Annotated[str, StringConstraints(pattern=r"^\d+$")]
Side = Literal["base", "candidate"]


class MemoryFigures(BaseModel):
    """One memory snapshot of a request, in MiB (SGLang's perf-log keys; device fields are 0 on CPU)."""

    model_config = EXACT

    allocated_mb: Figure = 0.0
    reserved_mb: Figure = 0.0
    peak_allocated_mb: Figure = 0.0
    peak_reserved_mb: Figure = 0.0
    peak_host_anon_mb: Figure = 0.0


class RequestRow(BaseModel):
    """One measured request (``results.verdict.request_rows`` writes it); an A/B run's rows name their side."""

    model_config = EXACT

    scenario: str
    e2e_ms: Figure
    request: Count | None = None
    request_id: str | None = None
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
    side: Side | None = None
    process_pair: Count | None = None


class ServerRecord(BaseModel):
    """A server the run started (``ServerProcess.info``; an A/B run's name their side and process pair)."""

    model_config = EXACT

    pid: Annotated[int, Field(ge=1)] | None
    port: Annotated[int, Field(ge=1, le=65535)]
    log: str
    load_ms: Figure | None = None
    devices: dict[str, str] = Field(default_factory=dict)
    command: str = ""
    ended: str | None = None
    side: Side | None = None
    process_pair: Count | None = None
    ready_s: Figure | None = None
    ready: bool | None = None  # whether it got ready (the top-level list: failed starts too)
    error: str | None = None  # why a start failed
