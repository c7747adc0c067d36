"""A server the run started, as the results file records it: one strict, finite model, built where the server
starts (:meth:`.process.ServerProcess.record`, :meth:`.pool.ServerStart.record`) and read back by every reader."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .._util.records import Count, Record
from ..perf.schema import Value
from ..verdicts.vocab import Side


class ServerRecord(Record):
    """One server start (an A/B run's name their side and process pair; the top-level list's say whether it got
    ready, and why a failed start failed)."""

    side: Side | None = None
    process_pair: Count | None = None
    ready_s: Value | None = None
    pid: Annotated[int, Field(ge=1)] | None
    port: Annotated[int, Field(ge=1, le=65535)]
    load_ms: Value | None = None
    log: str
    devices: dict[str, str] = Field(default_factory=dict)
    command: str = ""
    ended: str | None = None
    ready: bool | None = None  # whether it got ready (the top-level list: failed starts too)
    error: str | None = None  # why a start failed
