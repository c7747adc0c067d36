"""Memory figures of the perf record, as SGLang's GPU worker reports them.

SGLang writes the ``load_peak``, ``runtime_peak`` and ``warmup_peak`` snapshots only on a CUDA
device, each a copy of one ``capture_memory_snapshot()``: the device peaks of its phase plus the
process's host anonymous-memory (RssAnon) peak over its whole life, the same in all three. The
reference server has no device, so by default (``device``) it writes no snapshots, as SGLang on a
CPU does; ``always`` writes the three with device figures 0 and that lifetime host peak, so the
host-memory path of a client can be exercised on a CPU.
"""

from __future__ import annotations

from typing import Literal

from ..protocol import MEMORY_SNAPSHOT_KEYS, MemorySnapshot

SnapshotMode = Literal["device", "always"]
SNAPSHOT_MODES: tuple[SnapshotMode, ...] = ("device", "always")


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
    """The lifetime peak of RssAnon, sampled at load, at every stage boundary and every denoise step."""

    def __init__(self, mode: SnapshotMode = "device") -> None:
        self.mode = mode
        self._peak = 0.0

    def sample(self) -> None:
        self._peak = max(self._peak, host_anon_mb())

    def snapshots(self) -> dict[str, MemorySnapshot]:
        """The record's snapshots: none without a device (``device`` mode), else the three, equal."""
        if self.mode != "always":
            return {}
        self.sample()
        snapshot = MemorySnapshot(peak_host_anon_mb=round(self._peak, 2))
        return {key: snapshot.model_copy() for key in MEMORY_SNAPSHOT_KEYS}
