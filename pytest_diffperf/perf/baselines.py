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

from .._util.jsonfile import read_json_object
from ..cases import Case
from ..errors import DiffperfError
from ..platforms import (
    FRAGMENT_PLATFORMS,
    FRAGMENTS,
    PLATFORMS,
    Platform,
    baseline_file_stem,
    fragment_platform,
    locate,
)
from .schema import Sampling, ScenarioBaseline, Tolerances, baseline_problems, is_flat

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
    fragments: dict[Path, Platform] = field(default_factory=dict)  # each NPU/MUSA fragment file -> its platform

    def fragment_of(self, scenario_id: str) -> Platform | None:
        """The NPU/MUSA platform whose fragment defines the scenario (None: the platform or single file)."""
        return self.fragments.get(self.source[scenario_id])

    def platform_file(self, hardware: Platform | None) -> Path:
        """The file that holds a platform's own scenarios: its NPU/MUSA fragment, else the platform file."""
        return fragment_path(self.primary, hardware) if hardware in FRAGMENT_PLATFORMS else self.primary

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


def baseline_files(path: str | Path, hardware: Platform | None = None) -> list[Path]:
    """The files ``load_baselines`` reads: the platform or single file first, then fragments."""
    found = locate(path, hardware, single=SINGLE_FILE, folder=PLATFORM_DIR, stems=lambda hw: (baseline_file_stem(hw),))
    if found.file is None:
        assert found.folder is not None
        assert hardware is not None
        stem = baseline_file_stem(hardware)
        raise DiffperfError(
            f"no baseline file for platform {stem!r} ({stem}.json); files here: "
            f"{', '.join(found.available) or 'none'}; known platforms: {', '.join(PLATFORMS)}",
            source=str(found.folder),
        )
    path = found.file
    fragments = [fragment_path(path, p) for p in FRAGMENT_PLATFORMS]
    return [path] + [f for f in fragments if f.is_file() and f.resolve() != path.resolve()]


def fragment_path(primary: Path, platform: Platform) -> Path:
    """The NPU or MUSA fragment merged into the platform (or single) file ``primary`` (written as ``primary`` is,
    or absolute where its folder has no name to go up from: ``h100.json``, ``../h100.json``)."""
    folder = primary.parent
    if folder.name in ("", ".."):
        folder = Path(os.path.abspath(folder))
    base = folder.parent if folder.name == PLATFORM_DIR else folder
    return base / FRAGMENTS[FRAGMENT_PLATFORMS.index(platform)]


def load_baselines(
    path: str | Path, hardware: Platform | None = None, *, runner_name: str | None = None
) -> BaselineSet:
    """Load a baseline file or ``perf_baselines/`` folder (``hardware`` picks the platform file).

    ``runner_name`` (default: env ``RUNNER_NAME``) selects the first matching ``runner_overrides``
    prefix of the platform file, applied to its scenarios before parsing.
    """
    files = baseline_files(path, hardware)
    primary = files[0]
    if runner_name is None:
        runner_name = os.environ.get("RUNNER_NAME", "")
    raw = {f: read_json_object(f) for f in files}
    for f in files:
        check_baseline_doc(raw[f], f)
    doc = raw[primary]
    tolerances, flat = parse_tolerances(doc)
    step_fractions = Sampling.model_validate(doc["sampling"]).step_fractions if "sampling" in doc else []
    prefix, overrides = runner_overrides(doc, runner_name)
    scenarios: dict[str, ScenarioBaseline] = {}
    source: dict[str, Path] = {}
    for f in files:
        for name, entry in raw[f]["scenarios"].items():
            fields = {**entry, **overrides[name]} if f == primary and name in overrides else entry
            scenarios[name] = ScenarioBaseline.model_validate(fields)
            source[name] = f
    fragments = {f: platform for f in files if (platform := fragment_platform(f)) is not None}
    return BaselineSet(files, primary, tolerances, step_fractions, scenarios, source, raw, flat, prefix, fragments)


def check_baseline_doc(doc: dict[str, Any], path: Path) -> None:
    """DiffperfError naming the first schema problem of one baseline (or fragment) document, as the loader
    refuses it; writers check what they would write with it."""
    problems = baseline_problems(doc)
    if problems:
        first, more = problems[0], f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise DiffperfError(first.message + more, source=str(path), key=first.path or None)


def parse_tolerances(doc: dict[str, Any]) -> tuple[dict[str, Tolerances], bool]:
    """Profiles by name, and whether the file used the legacy flat form (of a document without problems)."""
    tol = doc.get("tolerances", {})
    if is_flat(tol):
        return {LEGACY_PROFILE: Tolerances.model_validate(tol)}, True
    return {name: Tolerances.model_validate(profile) for name, profile in tol.items()}, False


def runner_overrides(doc: dict[str, Any], runner_name: str) -> tuple[str | None, dict[str, Any]]:
    """The first ``runner_overrides`` prefix ``runner_name`` starts with, and its per-scenario fields."""
    for prefix, per_scenario in doc.get("runner_overrides", {}).items():
        if runner_name.startswith(prefix):
            return prefix, per_scenario
    return None, {}


def judged_on(fragment: Platform | None, hardware: Platform | None) -> bool:
    """Whether a scenario is judged on ``hardware``: an NPU/MUSA fragment's (``fragment``: its platform) on that
    platform only, and only they there; the platform (or single) file's everywhere else."""
    return fragment == (hardware if hardware in FRAGMENT_PLATFORMS else None)


def select_scenarios(
    baselines: BaselineSet, cases: Mapping[str, Case], hardware: Platform | None, skipped: Sequence[str] = ()
) -> list[str]:
    """Baseline scenarios judged on this hardware in file order, then cases that have no baseline yet, then the
    ``skipped`` ids (cases collected only to be skipped, such as SGLang's not expressible ones) that have none."""
    ids = [sid for sid in baselines.scenarios if judged_on(baselines.fragment_of(sid), hardware)]
    ids += [cid for cid in cases if cid not in baselines.scenarios]
    return ids + [sid for sid in skipped if sid not in baselines.scenarios and sid not in cases]
