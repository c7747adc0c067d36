"""The schema of SGLang's perf-baseline files: tolerance profiles, scenario baselines, step sampling.

Unknown keys are kept (``extra="allow"``); numbers must be finite and non-negative.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints

from .._util.findings import schema_problems
from .._util.jsonfile import STRICT, describe_type, json_path
from .._util.names import name_problem

MAX_VALUE = 1e9  # ms (11.6 days), MiB (1 PiB), relative (1e11 %): larger makes a limit no run can exceed
Value = Annotated[float, Field(ge=0, le=MAX_VALUE)]
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


class RequestCPU(BaseModel):
    """The server's CPU time and its threads' wait for a CPU (ms) over the request a baseline entry's figures
    came from: the wait already in them, which the busy-machine bound does not allow twice."""

    model_config = STRICT

    cpu_ms: Value
    wait_ms: Value


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
    request_cpu: RequestCPU | None = None  # the plugin's own (SGLang's loaders ignore it)

    @property
    def own_wait(self) -> tuple[float, float] | None:
        """(CPU ms, wait ms) of the request the figures came from, when recorded."""
        return (self.request_cpu.cpu_ms, self.request_cpu.wait_ms) if self.request_cpu is not None else None

    @property
    def steps(self) -> dict[int, float]:
        """``denoise_step_ms`` keyed by int step index."""
        return {int(k): v for k, v in self.denoise_step_ms.items()}


class Sampling(BaseModel):
    model_config = STRICT

    step_fractions: list[Fraction]


@dataclass(frozen=True)
class Problem:
    """One schema problem of a baseline document: where (full JSON path), what, and in which scenario."""

    path: str
    message: str
    scenario: str = ""


def baseline_problems(doc: Mapping[str, Any]) -> list[Problem]:
    """Every schema problem of one baseline (or NPU/MUSA fragment) document, section by section.

    The loader raises the first one; ``diffperf lint`` reports them all.
    """
    out = tolerance_problems(doc)
    if "metadata" in doc and not isinstance(doc["metadata"], dict):
        out.append(Problem("metadata", f"expected an object, got {describe_type(doc['metadata'])}"))
    if "sampling" in doc:
        out += [Problem(k, m) for k, m in schema_problems(Sampling, doc["sampling"], "sampling")]
    elif "tolerances" in doc:
        out.append(Problem("sampling", "required key is missing (with step_fractions)"))
    if "scenarios" not in doc:
        return [*out, Problem("scenarios", "required key is missing")]
    scenarios = doc["scenarios"]
    if not isinstance(scenarios, dict):
        return [*out, Problem("scenarios", f"expected an object, got {describe_type(scenarios)}")]
    for name, entry in scenarios.items():
        problem = name_problem(name)  # scenario keys become test ids and file names: plain names only
        if problem:
            out.append(Problem(json_path("scenarios", name), f"scenario key {problem}", name))
        out += [Problem(k, m, name) for k, m in scenario_problems(entry, json_path("scenarios", name))]
    return out + override_problems(doc.get("runner_overrides", {}), scenarios)


def is_flat(tolerances: Mapping[str, Any]) -> bool:
    """SGLang's legacy flat tolerances (one profile for every name) rather than profiles by name."""
    return "e2e" in tolerances and not isinstance(tolerances["e2e"], dict)


def tolerance_problems(doc: Mapping[str, Any]) -> list[Problem]:
    if "tolerances" not in doc:
        return []
    tol = doc["tolerances"]
    if not isinstance(tol, dict) or not tol:
        return [Problem("tolerances", f"expected an object of tolerance profiles, got {describe_type(tol)}")]
    if is_flat(tol):
        return [Problem(k, m) for k, m in schema_problems(Tolerances, tol, "tolerances")]
    return [
        Problem(k, m)
        for name, profile in tol.items()
        for k, m in schema_problems(Tolerances, profile, json_path("tolerances", name))
    ]


def scenario_problems(entry: Any, prefix: str = "") -> list[tuple[str, str]]:
    """(JSON path, message) for each schema problem of one scenario entry."""
    return schema_problems(ScenarioBaseline, entry, prefix)


def override_problems(overrides: Any, scenarios: Mapping[str, Any]) -> list[Problem]:
    """``{runner prefix: {scenario: {field: value}}}`` naming existing scenarios, each merged entry valid."""
    key = "runner_overrides"
    if not isinstance(overrides, dict):
        return [Problem(key, f"expected an object, got {describe_type(overrides)}")]
    out: list[Problem] = []
    for prefix, per_scenario in overrides.items():
        if not isinstance(per_scenario, dict):
            message = f"expected an object of scenario overrides, got {describe_type(per_scenario)}"
            out.append(Problem(json_path(key, prefix), message))
            continue
        for name, fields in per_scenario.items():
            where = json_path(json_path(key, prefix), name)
            if name not in scenarios:
                out.append(Problem(where, "override for a scenario that is not in the file", name))
            elif not isinstance(fields, dict):
                out.append(Problem(where, f"expected an object of fields, got {describe_type(fields)}", name))
            elif isinstance(scenarios[name], dict):
                merged = {**scenarios[name], **fields}
                out += [Problem(k, m, name) for k, m in scenario_problems(merged, where)]
    return out
