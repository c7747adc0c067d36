"""The schema of SGLang's perf-baseline files: tolerance profiles, scenario baselines, step sampling.

Unknown keys are kept (``extra="allow"``); numbers must be finite and non-negative.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, StringConstraints

from .._util.jsonfile import STRICT

Value = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
StepIndex = Annotated[str, StringConstraints(pattern=r"^\d+$")]


class Tolerances(BaseModel):
    """One tolerance profile: relative allowances (0.25 = 25 %)."""

    model_config = STRICT

    e2e: Value
    denoise_stage: Value
    non_denoise_stage: Value
    denoise_step: Value
    denoise_agg: Value
    load_peak_vram: Value | None = None
    runtime_peak_vram: Value | None = None
    load: Value | None = None
    host_anon: Value | None = None


class ScenarioBaseline(BaseModel):
    """Expected figures of one scenario (ms, MiB); unknown keys are kept."""

    model_config = STRICT

    stages_ms: dict[str, Value | None]
    denoise_step_ms: dict[StepIndex, Value]
    expected_e2e_ms: Value
    expected_avg_denoise_ms: Value
    expected_median_denoise_ms: Value
    estimated_full_test_time_s: Value | None = None
    expected_load_ms: Value | None = None
    load_peak_vram_mb: Value | None = None
    runtime_peak_vram_mb: Value | None = None
    load_peak_allocated_mb: Value | None = None
    runtime_peak_allocated_mb: Value | None = None
    warmup_peak_vram_mb: Value | None = None
    load_peak_host_anon_mb: Value | None = None
    runtime_peak_host_anon_mb: Value | None = None
    timing_tolerance: Value | None = None
    notes: str | None = None

    @property
    def steps(self) -> dict[int, float]:
        """``denoise_step_ms`` keyed by int step index."""
        return {int(k): v for k, v in self.denoise_step_ms.items()}


class Sampling(BaseModel):
    model_config = STRICT

    step_fractions: list[Fraction]
