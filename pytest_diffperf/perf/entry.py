"""A baseline scenario built from a measurement, in SGLang's format (2 decimals).

All fields come from one request: the one with the median e2e, so that the aggregates, stages
and e2e agree with the step map they were measured with; its server CPU time and wait for a CPU too
(``request_cpu``: the wait already in the figures, for the busy-machine bound).
"""

from __future__ import annotations

import statistics
from typing import Any

from ..protocol import PER_FRAME_STAGE
from .measurement import Measurement
from .schema import ScenarioBaseline


def representative(measurement: Measurement) -> int:
    """Index of the request with the median e2e (the lower median for an even count)."""
    order = sorted(range(len(measurement.e2e_ms)), key=lambda i: (measurement.e2e_ms[i], i))
    return order[(len(order) - 1) // 2]


def entry_from_measurement(measurement: Measurement, *, full_test_time_s: float | None = None) -> dict[str, Any]:
    i = representative(measurement)
    steps = measurement.steps[i]
    stages = {name: round(ms, 2) for name, ms in measurement.stages[i].items()}
    if measurement.is_video and measurement.num_frames:
        stages.setdefault(PER_FRAME_STAGE, round(measurement.e2e_ms[i] / measurement.num_frames, 2))
    scenario: dict[str, Any] = {
        "stages_ms": stages,
        "denoise_step_ms": {str(n): round(ms, 2) for n, ms in enumerate(steps)},
        "expected_e2e_ms": round(measurement.e2e_ms[i], 2),
        "expected_avg_denoise_ms": round(statistics.fmean(steps), 2) if steps else 0.0,
        "expected_median_denoise_ms": round(statistics.median(steps), 2) if steps else 0.0,
    }
    if measurement.load_ms:
        scenario["expected_load_ms"] = round(measurement.load_ms[min(i, len(measurement.load_ms) - 1)], 2)
    for key, values in sorted(measurement.memory.items()):
        value = values[min(i, len(values) - 1)] if values else 0
        if key in ScenarioBaseline.model_fields and value:  # device fields are 0 on CPU: not a baseline
            scenario[key] = round(value, 2)
    own = measurement.own_wait(i)
    if own is not None:
        scenario["request_cpu"] = {"cpu_ms": round(own[0], 2), "wait_ms": round(own[1], 2)}
    if full_test_time_s is not None:
        scenario["estimated_full_test_time_s"] = round(full_test_time_s, 1)
    return scenario
