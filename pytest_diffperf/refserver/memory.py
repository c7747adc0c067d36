"""Memory figures of the perf record: host anonymous memory (RssAnon) sampled at stage boundaries."""

from __future__ import annotations

from ..protocol import MEMORY_SNAPSHOT_KEYS, MemorySnapshot


def host_anon_mb() -> float:
    """The process's anonymous resident memory (RssAnon) in MiB; 0 where /proc is unavailable."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class MemoryTracker:
    """Peak RssAnon per phase (``load``, ``warmup``, ``runtime``), taken at sampling points.

    ``runtime`` is reset at the start of each request, so ``runtime_peak`` is that request's peak.
    """

    def __init__(self) -> None:
        self._peaks: dict[str, float] = {}

    def reset(self, phase: str) -> None:
        self._peaks[phase] = 0.0

    def sample(self, phase: str) -> None:
        self._peaks[phase] = max(self._peaks.get(phase, 0.0), host_anon_mb())

    def snapshots(self) -> dict[str, MemorySnapshot]:
        return {
            key: MemorySnapshot(peak_host_anon_mb=round(self._peaks.get(key.removesuffix("_peak"), 0.0), 2))
            for key in MEMORY_SNAPSHOT_KEYS
        }
