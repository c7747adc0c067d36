"""SGLang perf log (one ``PerfRecord`` JSON line per request) and the per-request ``server_perf_dump`` file.

Lines carry exactly SGLang's ``RequestPerfRecord`` keys, serialised as its ``json.dumps`` does, and
are appended with a single ``os.write`` on an ``O_APPEND`` descriptor under a lock, so concurrent
readers never see a partial line from this process. A dump (``perf_dump_path`` in a request) is
written to a temporary file and then ``os.replace``d, as SGLang's ``dump_benchmark_report`` does.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from .._util.text import truthy
from ..protocol import (
    COMMIT_ENV,
    DENOISING_STAGE,
    PERF_DUMP_TAG,
    PERF_LOG_DIR_ENV,
    PERF_LOG_FILE,
    PERF_RECORD_TAG,
    STAGE_LOGGING_ENV,
    MemorySnapshot,
    PerfRecord,
    StageRecord,
)


def commit_hash() -> str:
    """``$SGLANG_GIT_COMMIT`` as SGLang reports it, else this package's version."""
    if os.environ.get(COMMIT_ENV):
        return os.environ[COMMIT_ENV]
    try:
        return f"pytest-diffperf-refserver-{metadata.version('pytest-diffperf')}"
    except metadata.PackageNotFoundError:
        return "pytest-diffperf-refserver"


def stage_logging_enabled() -> bool:
    return truthy(os.environ.get(STAGE_LOGGING_ENV))


class PerfLog:
    """Writer for ``$SGLANG_PERF_LOG_DIR/performance.log`` (and the requests' ``perf_dump_path`` files)."""

    def __init__(self) -> None:
        self.stage_logging = stage_logging_enabled()
        self.path = Path(os.environ.get(PERF_LOG_DIR_ENV) or os.getcwd()) / PERF_LOG_FILE
        self._commit = commit_hash()
        self._lock = threading.Lock()

    def write(
        self,
        request_id: str,
        stages: list[tuple[str, float]],
        steps: list[float],
        total_ms: float,
        memory: dict[str, MemorySnapshot],
        *,
        dump_requested: bool = False,
    ) -> PerfRecord | None:
        """Append the request's line when stage logging is on or the request asked for a dump (as SGLang)."""
        if not (self.stage_logging or dump_requested):
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
        line = (json.dumps(record.model_dump()) + "\n").encode()
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        return record

    def dump(self, path: str, record: PerfRecord, model: str) -> None:
        """Write SGLang's ``server_perf_dump`` report of ``record`` to ``path`` atomically."""
        report = {
            "timestamp": datetime.now(timezone.utc).isoformat(),
            "request_id": record.request_id,
            "commit_hash": record.commit_hash,
            "tag": PERF_DUMP_TAG,
            "total_duration_ms": record.total_duration_ms,
            "steps": [{"name": s.name, "duration_ms": s.execution_time_ms} for s in record.stages],
            "denoise_steps_ms": [{"step": i, "duration_ms": ms} for i, ms in enumerate(record.steps)],
            "memory_checkpoints": {name: snap.model_dump() for name, snap in record.memory_snapshots.items()},
            "meta": {"model": model},
        }
        target = os.path.abspath(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
        os.replace(tmp, target)
