"""What was measured for one scenario: every metric's samples, read from the server's perf records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..protocol import DENOISING_STAGE, MEMORY_SNAPSHOT_KEYS, PerfRecord


@dataclass(frozen=True)
class Measurement:
    """Samples of every metric of one scenario (one sample per request)."""

    e2e_ms: Sequence[float]
    steps: Sequence[Sequence[float]]
    stages: Sequence[Mapping[str, float]]
    denoising_stages: frozenset[str] = frozenset({DENOISING_STAGE})
    load_ms: Sequence[float] = ()
    memory: Mapping[str, Sequence[float]] = field(default_factory=dict)  # e.g. "load_peak_allocated_mb"
    num_frames: int | None = None
    is_video: bool = False
    cpu_ms: Sequence[float | None] = ()  # per request: the server's CPU time over it, where read
    wait_ms: Sequence[float | None] = ()  # per request: its threads' wait for a CPU, where the kernel says

    def request(self, index: int) -> Measurement:
        """The samples of request ``index`` alone (the load time and memory figures not per request kept whole)."""
        n = len(self.e2e_ms)
        memory = {k: v[index : index + 1 or None] if len(v) == n else v for k, v in self.memory.items()}
        return replace(
            self,
            e2e_ms=self.e2e_ms[index : index + 1 or None],
            steps=self.steps[index : index + 1 or None] if len(self.steps) == n else self.steps,
            stages=self.stages[index : index + 1 or None] if len(self.stages) == n else self.stages,
            memory=memory,
            cpu_ms=self.cpu_ms[index : index + 1 or None] if len(self.cpu_ms) == n else self.cpu_ms,
            wait_ms=self.wait_ms[index : index + 1 or None] if len(self.wait_ms) == n else self.wait_ms,
        )

    def stage_samples(self) -> dict[str, list[float]]:
        """Stage name -> its time in each request that logged it (stages in the order first seen)."""
        samples: dict[str, list[float]] = {}
        for per_request in self.stages:
            for name, ms in per_request.items():
                samples.setdefault(name, []).append(ms)
        return samples

    def own_wait(self, index: int) -> tuple[float, float] | None:
        """(CPU ms, wait ms) of request ``index``, when both were read."""
        n = len(self.e2e_ms)
        if len(self.cpu_ms) != n or len(self.wait_ms) != n:
            return None
        cpu, wait = self.cpu_ms[index], self.wait_ms[index]
        return (cpu, wait) if cpu is not None and wait is not None else None

    @classmethod
    def from_records(
        cls,
        records: Sequence[PerfRecord],
        *,
        load_ms: float | None = None,
        num_frames: int | None = None,
        is_video: bool = False,
    ) -> Measurement:
        """Samples from perf-log records, read as SGLang reads them.

        A stage logged twice in one record keeps its last time; a stage is denoising when the
        record flags it, else when it is named ``DenoisingStage``. Memory snapshots map
        ``peak_allocated_mb`` -> ``<snapshot>_allocated_mb``, ``peak_reserved_mb`` ->
        ``<snapshot>_vram_mb``, ``peak_host_anon_mb`` -> ``<snapshot>_host_anon_mb``.
        """
        denoising: set[str] = set()
        stages: list[dict[str, float]] = []
        memory: dict[str, list[float]] = {}
        for record in records:
            stages.append({s.name: s.execution_time_ms for s in record.stages})
            for s in record.stages:
                flagged = s.is_denoising if "is_denoising" in s.model_fields_set else s.name == DENOISING_STAGE
                if flagged:
                    denoising.add(s.name)
            for key in MEMORY_SNAPSHOT_KEYS:
                snap = record.memory_snapshots.get(key)
                if snap is not None:
                    memory.setdefault(f"{key}_allocated_mb", []).append(snap.peak_allocated_mb)
                    memory.setdefault(f"{key}_vram_mb", []).append(snap.peak_reserved_mb)
                    memory.setdefault(f"{key}_host_anon_mb", []).append(snap.peak_host_anon_mb)
        return cls(
            e2e_ms=[r.total_duration_ms for r in records],
            steps=[list(r.steps) for r in records],
            stages=stages,
            denoising_stages=frozenset(denoising),
            load_ms=() if load_ms is None else (load_ms,),
            memory=memory,
            num_frames=num_frames,
            is_video=is_video,
        )
