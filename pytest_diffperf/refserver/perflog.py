"""SGLang perf log: one ``PerfRecord`` JSON line per request.

Lines are appended with a single ``os.write`` on an ``O_APPEND`` descriptor under a lock, so
concurrent readers never see a partial line from this process.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from ..protocol import (
    DENOISING_STAGE,
    PERF_LOG_DIR_ENV,
    PERF_LOG_FILE,
    PERF_RECORD_TAG,
    STAGE_LOGGING_ENV,
    MemorySnapshot,
    PerfRecord,
    StageRecord,
)


def _commit_hash() -> str:
    try:
        return f"pytest-diffperf-refserver-{metadata.version('pytest-diffperf')}"
    except metadata.PackageNotFoundError:
        return "pytest-diffperf-refserver"


class PerfLog:
    """Writer for ``$SGLANG_PERF_LOG_DIR/performance.log``; inert unless stage logging is on."""

    def __init__(self) -> None:
        self.enabled = os.environ.get(STAGE_LOGGING_ENV, "").strip().lower() in (
            "1",
            "true",
            "yes",
            "on",
        )
        self.path = Path(os.environ.get(PERF_LOG_DIR_ENV) or os.getcwd()) / PERF_LOG_FILE
        self._commit = _commit_hash()
        self._lock = threading.Lock()

    def write(
        self,
        request_id: str,
        stages: list[tuple[str, float]],
        steps: list[float],
        total_ms: float,
        memory: dict[str, MemorySnapshot],
    ) -> PerfRecord | None:
        if not self.enabled:
            return None
        record = PerfRecord(
            request_id=request_id,
            timestamp=datetime.now(timezone.utc).isoformat(),
            commit_hash=self._commit,
            tag=PERF_RECORD_TAG,
            stages=[StageRecord(name=n, execution_time_ms=ms, is_denoising=n == DENOISING_STAGE) for n, ms in stages],
            steps=steps,
            total_duration_ms=total_ms,
            memory_snapshots=memory,
        )
        line = (record.model_dump_json() + "\n").encode()
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        return record
