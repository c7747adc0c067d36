"""SGLang perf-baseline files: locating them and loading them into one ``BaselineSet``.

Layouts: a single ``perf_baselines.json`` (SGLang <= 0.5.12) or ``perf_baselines/<platform>.json``
(>= 0.5.15). Either way the NPU and MUSA fragments (``ascend/perf_baselines_npu.json``,
``musa/perf_baselines_musa.json``, next to the single file or the ``perf_baselines/`` folder) are
merged into the scenarios by key, as SGLang does on every machine.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util.jsonfile import join, kind, read_json_object, validate
from ..cases import Case
from ..errors import DiffperfError
from ..platforms import FRAGMENT_PLATFORMS, FRAGMENTS, PLATFORMS, baseline_file_stem, canonical_platform
from .schema import Sampling, ScenarioBaseline, Tolerances

SINGLE_FILE = "perf_baselines.json"
PLATFORM_DIR = "perf_baselines"
LEGACY_PROFILE = "legacy/flat"

# Tolerance field -> environment variable that overrides it (SGLang's names).
ENV_OVERRIDES = {
    "e2e": "SGLANG_E2E_TOLERANCE",
    "denoise_stage": "SGLANG_STAGE_TIME_TOLERANCE",
    "non_denoise_stage": "SGLANG_NON_DENOISE_STAGE_TIME_TOLERANCE",
    "denoise_step": "SGLANG_DENOISE_STEP_TOLERANCE",
    "denoise_agg": "SGLANG_DENOISE_AGG_TOLERANCE",
    "load_peak_vram": "SGLANG_LOAD_PEAK_VRAM_TOLERANCE",
    "runtime_peak_vram": "SGLANG_RUNTIME_PEAK_VRAM_TOLERANCE",
}

# --- the loaded set -----------------------------------------------------------------------------


@dataclass
class BaselineSet:
    """Scenarios merged from the platform (or single) file and its NPU/MUSA fragments."""

    files: list[Path]
    primary: Path
    tolerances: dict[str, Tolerances]
    step_fractions: list[float]
    scenarios: dict[str, ScenarioBaseline]
    source: dict[str, Path]
    raw: dict[Path, dict[str, Any]] = field(repr=False)
    flat_tolerances: bool = False  # a legacy flat tolerances dict: serves every profile name
    runner_prefix: str | None = None  # the runner_overrides prefix that was applied

    def profile(self, name: str, env: Mapping[str, str] = os.environ) -> Tolerances:
        """The named tolerance profile with SGLang's environment overrides applied."""
        if not self.tolerances:
            raise DiffperfError(
                "the file has no tolerances (a fragment file: load the platform file it is merged into)",
                source=str(self.primary),
                key="tolerances",
            )
        if self.flat_tolerances:
            tol = self.tolerances[LEGACY_PROFILE]
        elif name in self.tolerances:
            tol = self.tolerances[name]
        else:
            raise DiffperfError(
                f"unknown tolerance profile {name!r}; the file has: {', '.join(self.tolerances)}",
                source=str(self.primary),
                key="tolerances",
            )
        return tol.model_copy(update=env_overrides(env))


def env_overrides(env: Mapping[str, str]) -> dict[str, float]:
    """Tolerance fields set by environment variables; a bad value is a DiffperfError naming it."""
    out = {}
    for name, var in ENV_OVERRIDES.items():
        text = env.get(var, "").strip()
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise DiffperfError(f"expected a non-negative number, got {text!r}", source=var)
        out[name] = value
    return out


# --- locating and loading -----------------------------------------------------------------------


def baseline_files(path: str | Path, hardware: str | None = None) -> list[Path]:
    """The files ``load_baselines`` reads: the platform or single file first, then fragments."""
    path = Path(path)
    if hardware is not None:
        canonical_platform(hardware)
    if path.is_dir():
        if (path / PLATFORM_DIR).is_dir():
            path = path / PLATFORM_DIR
        elif (path / SINGLE_FILE).is_file():
            path = path / SINGLE_FILE
    if path.is_dir():
        available = sorted(p.stem for p in path.glob("*.json"))
        if hardware is None:
            raise DiffperfError(
                f"a {PLATFORM_DIR}/ folder needs a hardware platform; files here: {', '.join(available) or 'none'}",
                source=str(path),
            )
        stem = baseline_file_stem(hardware)
        if stem not in available:
            raise DiffperfError(
                f"no baseline file for platform {stem!r} ({stem}.json); files here: "
                f"{', '.join(available) or 'none'}; known platforms: {', '.join(PLATFORMS)}",
                source=str(path),
            )
        path = path / f"{stem}.json"
    elif not path.is_file():
        raise DiffperfError("file not found", source=str(path))
    fragments = [fragment_path(path, p) for p in FRAGMENT_PLATFORMS]
    return [path] + [f for f in fragments if f.is_file() and f.resolve() != path.resolve()]


def fragment_path(primary: Path, platform: str) -> Path:
    """The NPU or MUSA fragment merged into the platform (or single) file ``primary``."""
    base = primary.parent.parent if primary.parent.name == PLATFORM_DIR else primary.parent
    return base / FRAGMENTS[FRAGMENT_PLATFORMS.index(platform)]


def load_baselines(path: str | Path, hardware: str | None = None, *, runner_name: str | None = None) -> BaselineSet:
    """Load a baseline file or ``perf_baselines/`` folder (``hardware`` picks the platform file).

    ``runner_name`` (default: env ``RUNNER_NAME``) selects the first matching ``runner_overrides``
    prefix of the platform file, applied to its scenarios before parsing.
    """
    files = baseline_files(path, hardware)
    primary = files[0]
    if runner_name is None:
        runner_name = os.environ.get("RUNNER_NAME", "")
    raw = {f: read_json_object(f) for f in files}
    doc = raw[primary]
    tolerances, flat = parse_tolerances(doc, primary)
    step_fractions = parse_step_fractions(doc, primary, required=bool(tolerances))
    prefix, overrides = runner_overrides(doc, primary, runner_name)
    scenarios: dict[str, ScenarioBaseline] = {}
    source: dict[str, Path] = {}
    for f in files:
        for name, entry in scenario_dicts(raw[f], f).items():
            scenario = validate(ScenarioBaseline, entry, f, join("scenarios", name))
            if f == primary and prefix is not None and name in overrides:
                where = join(join("runner_overrides", prefix), name)
                scenario = validate(ScenarioBaseline, {**entry, **overrides[name]}, f, where)
            scenarios[name] = scenario
            source[name] = f
    return BaselineSet(files, primary, tolerances, step_fractions, scenarios, source, raw, flat, prefix)


def scenario_dicts(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    if "scenarios" not in doc:
        raise DiffperfError("required key is missing", source=str(path), key="scenarios")
    scenarios = doc["scenarios"]
    if not isinstance(scenarios, dict):
        raise DiffperfError(f"expected an object, got {kind(scenarios)}", source=str(path), key="scenarios")
    return scenarios


def parse_tolerances(doc: dict[str, Any], path: Path) -> tuple[dict[str, Tolerances], bool]:
    """Profiles by name, and whether the file used the legacy flat form."""
    if "tolerances" not in doc:
        return {}, False
    tol = doc["tolerances"]
    if not isinstance(tol, dict) or not tol:
        raise DiffperfError(
            f"expected an object of tolerance profiles, got {kind(tol)}", source=str(path), key="tolerances"
        )
    if "e2e" in tol and not isinstance(tol["e2e"], dict):
        return {LEGACY_PROFILE: validate(Tolerances, tol, path, "tolerances")}, True
    return {name: validate(Tolerances, prof, path, join("tolerances", name)) for name, prof in tol.items()}, False


def parse_step_fractions(doc: dict[str, Any], path: Path, *, required: bool) -> list[float]:
    if "sampling" not in doc:
        if required:
            raise DiffperfError("required key is missing (with step_fractions)", source=str(path), key="sampling")
        return []
    return validate(Sampling, doc["sampling"], path, "sampling").step_fractions


def runner_overrides(doc: dict[str, Any], path: Path, runner_name: str) -> tuple[str | None, dict[str, Any]]:
    """The first ``runner_overrides`` prefix ``runner_name`` starts with, and its per-scenario fields."""
    overrides = doc.get("runner_overrides", {})
    check_runner_overrides(overrides, scenario_dicts(doc, path), path)
    for prefix, per_scenario in overrides.items():
        if runner_name.startswith(prefix):
            return prefix, per_scenario
    return None, {}


def check_runner_overrides(overrides: Any, scenarios: Mapping[str, Any], path: Path) -> None:
    """``{runner prefix: {scenario: {field: value}}}`` naming existing scenarios only."""
    key = "runner_overrides"
    if not isinstance(overrides, dict):
        raise DiffperfError(f"expected an object, got {kind(overrides)}", source=str(path), key=key)
    for prefix, per_scenario in overrides.items():
        if not isinstance(per_scenario, dict):
            raise DiffperfError(
                f"expected an object of scenario overrides, got {kind(per_scenario)}",
                source=str(path),
                key=join(key, prefix),
            )
        for name, fields in per_scenario.items():
            where = join(join(key, prefix), name)
            if name not in scenarios:
                raise DiffperfError("override for a scenario that is not in the file", source=str(path), key=where)
            if not isinstance(fields, dict):
                raise DiffperfError(f"expected an object of fields, got {kind(fields)}", source=str(path), key=where)


def select_scenarios(
    baselines: BaselineSet, cases: Mapping[str, Case], hardware: str | None, skipped: Sequence[str] = ()
) -> list[str]:
    """Baseline scenarios of this hardware in file order, then cases that have no baseline yet, then the
    ``skipped`` ids (cases collected only to be skipped, such as SGLang's not expressible ones) that have none.

    NPU/MUSA fragment scenarios run on their own platform only, and only they run there.
    """
    platform = canonical_platform(hardware) if hardware else None
    wanted = platform if platform in FRAGMENT_PLATFORMS else None
    ids = [sid for sid in baselines.scenarios if _fragment_of(baselines, sid) == wanted]
    ids += [cid for cid in cases if cid not in baselines.scenarios]
    return ids + [sid for sid in skipped if sid not in baselines.scenarios and sid not in cases]


def _fragment_of(baselines: BaselineSet, scenario_id: str) -> str | None:
    source = baselines.source[scenario_id].as_posix()
    return next((p for p, rel in zip(FRAGMENT_PLATFORMS, FRAGMENTS, strict=True) if source.endswith("/" + rel)), None)
