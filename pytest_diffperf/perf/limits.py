"""The limit engine: the checks a scenario gets, their limits, and the verdict of each.

One formula everywhere: a check fails iff ``actual > max(expected * (1 + rel), expected + pad)``.
Faster never fails. The ``sglang`` preset reproduces SGLang 0.5.23's diffusion CI exactly.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..errors import DiffperfError
from ..protocol import DECODING_STAGE_SUFFIX, DENOISING_STAGE, PER_FRAME_STAGE
from .measurement import Measurement
from .schema import ScenarioBaseline, Tolerances

STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "median": statistics.median,
    "mean": statistics.fmean,
    "max": max,
    "min": min,
}
# Kinds whose baseline must be > 0 to guard anything, and whose measurement must be > 0 to count.
REQUIRED_POSITIVE = frozenset({"e2e", "load", "denoise_agg"})
CheckVerdict = Literal["pass", "fail", "missing", "unguarded"]
CheckKind = Literal["e2e", "load", "denoise_agg", "step", "stage", "per_frame", "vram", "host_anon"]
MEMORY_KINDS = frozenset({"vram", "host_anon"})


@dataclass(frozen=True)
class Preset:
    """Every fixed constant of the engine; rels are fractions, pads are in ms or MiB."""

    name: str
    pad_ms: float = 20.0  # e2e, load, denoise aggregates, image steps i>0, per-frame time
    first_step_rel: float = 4.0
    first_step_pad_ms: float = 80.0
    video_step_pad_ms: float = 160.0
    stage_pad_ms: float = 120.0
    decoding_suffix: str = DECODING_STAGE_SUFFIX
    decoding_min_rel: float = 0.9
    decoding_pad_ms: float = 450.0
    vram_pad_mb: float = 128.0
    host_anon_pad_mb: float = 256.0
    load_peak_vram_rel: float = 0.01  # when the profile has no load_peak_vram
    runtime_peak_vram_rel: float = 0.02  # when the profile has no runtime_peak_vram
    host_anon_rel: float = 0.02  # when the profile has no host_anon
    statistic: str = "median"  # how several samples of one metric become the actual value

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise DiffperfError(
                f"unknown statistic {self.statistic!r}; expected one of: {', '.join(STATISTICS)}",
                source=f"preset {self.name}",
            )

    def aggregate(self, samples: Sequence[float]) -> float | None:
        """The actual value of a metric from its samples (None when there are none)."""
        return STATISTICS[self.statistic](samples) if samples else None


PRESETS: dict[str, Preset] = {"sglang": Preset("sglang")}
# A case's SGLang release's step and decoding-stage allowances (``Case.limit_allowances``) -> the preset fields
# they change: 0.5.12 allowed the first step rel 0.4 with the 20 ms pad, video steps the 20 ms pad, decoding stages
# 250 ms; the releases before had no decoding-stage allowance (the 120 ms stage pad, its own rel).
ALLOWANCES: dict[str, dict[str, float]] = {
    "0.5.13": {},
    "0.5.12": {"first_step_rel": 0.4, "first_step_pad_ms": 20.0, "video_step_pad_ms": 20.0, "decoding_pad_ms": 250.0},
    "0.5.6": {
        "first_step_rel": 0.4, "first_step_pad_ms": 20.0, "video_step_pad_ms": 20.0, "decoding_pad_ms": 120.0,
        "decoding_min_rel": 0.0,
    },
}  # fmt: skip


def with_allowances(preset: Preset, release: str) -> Preset:
    """``preset`` with the step and decoding-stage allowances of SGLang ``release`` (a key of ``ALLOWANCES``)."""
    changed = ALLOWANCES[release]
    if not changed:
        return preset
    return Preset(**{**dataclasses.asdict(preset), **changed, "name": f"{preset.name} (SGLang {release} allowances)"})


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise DiffperfError(f"unknown preset {name!r}; expected one of: {', '.join(PRESETS)}", source="preset")
    return PRESETS[name]


@dataclass(frozen=True)
class JudgeRules:
    """What a scenario's checks are planned and judged by, besides its baseline and measurement: the profile's
    tolerances, the preset, the sampled steps, the kinds of check judged (None: all), and whether the platform's
    memory figures are judged at all (``platforms.checks_vram``/``checks_host_anon``: SGLang judges memory only
    on CUDA)."""

    tolerances: Tolerances
    preset: Preset
    step_fractions: tuple[float, ...] = ()
    kinds: frozenset[CheckKind] | None = None
    vram: bool = True
    host_anon: bool = True
    required: frozenset[str] = frozenset()  # baseline keys whose absence fails (a case's SGLang release's rule)


def limit(expected: float, rel: float, pad: float) -> float:
    """The one limit formula."""
    return max(expected * (1 + rel), expected + pad)


@dataclass(frozen=True)
class Check:
    """One guarded metric: ``name`` identifies it, ``key`` is the scenario field it reads."""

    name: str  # e2e, load, avg_denoise, median_denoise, step[i], stage[Name], per_frame, <memory field>
    kind: CheckKind
    expected: float
    rel: float
    pad: float
    limit: float
    key: str = ""
    unit: str = "ms"
    required: bool = False  # a baseline missing (expected 0) fails instead of being unguarded


@dataclass(frozen=True)
class CheckResult:
    check: Check
    actual: float | None
    verdict: CheckVerdict
    message: str

    @property
    def passed(self) -> bool:
        """True for pass and unguarded (surfaced, never failed); False for fail and missing."""
        return self.verdict in ("pass", "unguarded")


def step_name(index: int) -> str:
    return f"step[{index}]"


def stage_name(stage: str) -> str:
    return f"stage[{stage}]"


def step_indices(num_steps: int, step_fractions: Sequence[float]) -> list[int]:
    """SGLang's sampled step indices over ``num_steps`` measured steps."""
    if num_steps <= 0:
        return []
    max_idx = num_steps - 1
    return sorted({min(max_idx, max(0, round(f * max_idx))) for f in step_fractions})


def plan_checks(
    scenario: ScenarioBaseline,
    rules: JudgeRules,
    *,
    is_video: bool,
    num_frames: int | None,
    num_steps: int | None = None,
    denoising_stages: Collection[str] = frozenset({DENOISING_STAGE}),
    memory: Mapping[str, float] | None = None,
) -> list[Check]:
    """Every check the engine makes for a scenario by ``rules`` (of ``rules.kinds`` only, when given).

    ``num_steps`` is the measured step count (default: the baseline's highest index + 1);
    ``memory`` the measured memory figures (None: plan as if all were measured).
    """
    tol, preset = rules.tolerances, rules.preset
    tt = scenario.timing_tolerance

    def timing(rel: float) -> float:
        return rel if tt is None else max(rel, tt)

    def add(name: str, kind: CheckKind, expected: float, rel: float, pad: float, key: str, unit: str = "ms") -> None:
        required = key in rules.required
        checks.append(Check(name, kind, expected, rel, pad, limit(expected, rel, pad), key, unit, required))

    checks: list[Check] = []
    add("e2e", "e2e", scenario.expected_e2e_ms, timing(tol.e2e), preset.pad_ms, "expected_e2e_ms")
    if scenario.expected_load_ms is not None or "expected_load_ms" in rules.required:
        load_rel = tol.e2e if tol.load is None else tol.load
        add("load", "load", scenario.expected_load_ms or 0.0, timing(load_rel), preset.pad_ms, "expected_load_ms")
    for name, key in (
        ("avg_denoise", "expected_avg_denoise_ms"),
        ("median_denoise", "expected_median_denoise_ms"),
    ):
        add(name, "denoise_agg", getattr(scenario, key), timing(tol.denoise_agg), preset.pad_ms, key)

    baseline_steps = scenario.steps
    if num_steps is None:
        num_steps = max(baseline_steps) + 1 if baseline_steps else 0
    step_pad = preset.video_step_pad_ms if is_video else preset.pad_ms
    for i in step_indices(num_steps, rules.step_fractions):
        if i not in baseline_steps:
            continue
        rel, pad = (preset.first_step_rel, preset.first_step_pad_ms) if i == 0 else (tol.denoise_step, step_pad)
        add(step_name(i), "step", baseline_steps[i], timing(rel), pad, f"denoise_step_ms.{i}")

    for stage, expected in scenario.stages_ms.items():
        if expected is None or (stage == PER_FRAME_STAGE and is_video):
            continue
        rel = timing(tol.denoise_stage if stage in denoising_stages else tol.non_denoise_stage)
        pad = preset.stage_pad_ms
        if stage.endswith(preset.decoding_suffix):
            rel, pad = max(rel, preset.decoding_min_rel), preset.decoding_pad_ms
        add(stage_name(stage), "stage", expected, rel, pad, f"stages_ms.{stage}")

    per_frame = scenario.stages_ms.get(PER_FRAME_STAGE)
    if is_video and num_frames and per_frame:
        key = f"stages_ms.{PER_FRAME_STAGE}"
        add("per_frame", "per_frame", per_frame, timing(tol.denoise_stage), preset.pad_ms, key)

    _plan_memory(scenario, tol, preset, memory, add, vram=rules.vram, host_anon=rules.host_anon)
    for key in ("load_peak_vram_mb", "runtime_peak_vram_mb") if rules.vram else ():
        if key in rules.required and getattr(scenario, key) is None and not any(c.key == key for c in checks):
            add(key, "vram", 0.0, 0.0, preset.vram_pad_mb, key, "MiB")
    return checks if rules.kinds is None else [c for c in checks if c.kind in rules.kinds]


def _plan_memory(
    scenario: ScenarioBaseline,
    tol: Tolerances,
    preset: Preset,
    memory: Mapping[str, float] | None,
    add: Callable[..., None],
    *,
    vram: bool,
    host_anon: bool,
) -> None:
    """VRAM (allocated when the baseline and measurement have it, else reserved), warmup, host."""

    def measured(key: str) -> bool:
        return memory is None or (memory.get(key) or 0) > 0

    vram_rels = {
        "load": preset.load_peak_vram_rel if tol.load_peak_vram is None else tol.load_peak_vram,
        "runtime": preset.runtime_peak_vram_rel if tol.runtime_peak_vram is None else tol.runtime_peak_vram,
    }
    for phase, rel in vram_rels.items() if vram else ():
        allocated, reserved = f"{phase}_peak_allocated_mb", f"{phase}_peak_vram_mb"
        expected_alloc, expected_reserved = getattr(scenario, allocated), getattr(scenario, reserved)
        if expected_alloc is not None and (measured(allocated) or expected_reserved is None):
            add(allocated, "vram", expected_alloc, rel, preset.vram_pad_mb, allocated, "MiB")
        elif expected_reserved is not None:
            add(reserved, "vram", expected_reserved, rel, preset.vram_pad_mb, reserved, "MiB")
    if vram and scenario.warmup_peak_vram_mb is not None and measured("warmup_peak_vram_mb"):
        rel = vram_rels["runtime"]
        add(
            "warmup_peak_vram_mb",
            "vram",
            scenario.warmup_peak_vram_mb,
            rel,
            preset.vram_pad_mb,
            "warmup_peak_vram_mb",
            "MiB",
        )
    if host_anon and measured("runtime_peak_host_anon_mb"):
        rel = preset.host_anon_rel if tol.host_anon is None else tol.host_anon
        for key in ("load_peak_host_anon_mb", "runtime_peak_host_anon_mb"):
            expected = getattr(scenario, key)
            if expected is not None:
                add(key, "host_anon", expected, rel, preset.host_anon_pad_mb, key, "MiB")


def measured_values(measurement: Measurement, preset: Preset) -> dict[str, float]:
    """Check name -> actual value (the preset's statistic over the samples)."""
    return {name: value for name, xs in samples(measurement).items() if (value := preset.aggregate(xs)) is not None}


def samples(measurement: Measurement) -> dict[str, list[float]]:
    """Check name -> its samples (one per request; load: one per process)."""
    m = measurement
    samples: dict[str, list[float]] = {"e2e": list(m.e2e_ms), "load": list(m.load_ms)}
    runs = [list(s) for s in m.steps if s]
    samples["avg_denoise"] = [statistics.fmean(s) for s in runs]
    samples["median_denoise"] = [statistics.median(s) for s in runs]
    for i in range(max(map(len, runs), default=0)):
        samples[step_name(i)] = [s[i] for s in runs if len(s) > i]
    for stage, ms in m.stage_samples().items():
        samples[stage_name(stage)] = ms
    if m.num_frames:
        samples["per_frame"] = [e / m.num_frames for e in m.e2e_ms]
    for key, values in m.memory.items():
        samples[key] = list(values)
    return samples


@dataclass(frozen=True)
class Evaluation:
    """Every check's verdict, and the memory checks the measurement could not make (``unreported``): the server
    reported no such figure (SGLang's ``CpuPlatform`` writes ``memory_snapshots: {}``). Named, never skipped
    silently."""

    results: list[CheckResult]
    unreported: list[str]


def assess(scenario: ScenarioBaseline, measurement: Measurement, rules: JudgeRules) -> Evaluation:
    """Every check of the scenario by ``rules`` (see ``plan_checks``) against the measurement, with its verdict, and
    the memory checks planned as if all were measured that the measurement's figures leave out."""
    values = measured_values(measurement, rules.preset)
    checks = plan_checks(
        scenario,
        rules,
        is_video=measurement.is_video,
        num_frames=measurement.num_frames,
        num_steps=max((len(s) for s in measurement.steps), default=0),
        denoising_stages=measurement.denoising_stages,
        memory={k: v for k, v in values.items() if k in measurement.memory},
    )
    all_memory = plan_checks(scenario, rules, is_video=measurement.is_video, num_frames=None, memory=None)
    made = {c.key for c in checks if c.kind in MEMORY_KINDS}
    unreported = sorted({c.key for c in all_memory if c.kind in MEMORY_KINDS} - made)
    return Evaluation([judge_check(check, values.get(check.name)) for check in checks], unreported)


def evaluate(scenario: ScenarioBaseline, measurement: Measurement, rules: JudgeRules) -> list[CheckResult]:
    """Every check of the scenario by ``rules`` (see ``plan_checks``) against the measurement, with its verdict."""
    return assess(scenario, measurement, rules).results


def judge_check(check: Check, actual: float | None) -> CheckResult:
    """The verdict of one check on one actual value."""
    unit = check.unit
    if check.required and check.expected <= 0:
        message = f"{check.name}: baseline {check.key} missing or invalid (the case's SGLang release fails it)"
        return CheckResult(check, actual, "missing", message)
    if check.kind in REQUIRED_POSITIVE and check.expected <= 0:
        return CheckResult(check, actual, "unguarded", f"{check.name}: baseline {check.key} is 0, so it is not guarded")
    if actual is None or not math.isfinite(actual) or (check.kind in REQUIRED_POSITIVE and actual <= 0):
        what = f"Stage {check.key.removeprefix('stages_ms.')} timing" if check.kind == "stage" else check.name
        invalid = "" if actual is None else f" or invalid ({actual})"
        return CheckResult(check, actual, "missing", f"{what} missing{invalid}")
    if actual > check.limit:
        return CheckResult(
            check,
            actual,
            "fail",
            f"{check.name}: {actual:.2f} {unit} > limit {check.limit:.2f} {unit} "
            f"(expected {check.expected:.2f} {unit}, rel {check.rel:.1%}, pad {check.pad:g} {unit})",
        )
    return CheckResult(check, actual, "pass", f"{check.name}: {actual:.2f} {unit} <= limit {check.limit:.2f} {unit}")
