"""Lint baseline and threshold files: every schema error, plus inconsistencies loading accepts.

Warnings (documented in docs/baselines.md): unguarded e2e/load, missing test-time estimate,
aggregates that disagree with a full step map, DenoisingStage far from the sum of its steps,
stages adding up to more than e2e, unknown keys, a scenario defined in two merged files.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from .baselines import BaselineSet, baseline_files, check_runner_overrides
from .schema import Sampling, ScenarioBaseline, Tolerances
from ..errors import DiffperfError
from .._util.jsonfile import describe_errors, join, parse_json
from .limits import PER_FRAME_STAGE
from ..platforms import canonical_platform
from ..protocol import DENOISING_STAGE
from ..thresholds import ThresholdFile, is_threshold_document, threshold_files

AGG_TOLERANCE = 0.03  # expected avg/median vs the mean/median of a full step map
DENOISE_SHORT = (0.10, 20.0)  # DenoisingStage below sum(steps) * (1 - 0.10) - 20 ms
DENOISE_LONG = (1.0, 120.0)  # DenoisingStage above sum(steps) * (1 + 1.0) + 120 ms
STAGES_OVER_E2E = (0.10, 20.0)  # sum of stages above e2e * (1 + 0.10) + 20 ms
TOP_LEVEL_KEYS = {
    "metadata",
    "tolerances",
    "improvement_reporting",
    "sampling",
    "runner_overrides",
    "scenarios",
}


@dataclass(frozen=True)
class Finding:
    severity: str  # "error" | "warning"
    file: str
    scenario: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.scenario or '-'}:{self.key or '-'}: {self.severity}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def lint_paths(paths: Iterable[str | Path], hardware: str | None = None) -> list[Finding]:
    """Lint files and folders (a folder: every file of both kinds, or the ones ``hardware`` reads)."""
    if hardware is not None:
        canonical_platform(hardware)
    out: list[Finding] = []
    for path in map(Path, paths):
        if path.is_file():
            out += lint_file(path)
        elif not path.is_dir():
            raise DiffperfError("file not found", source=str(path))
        elif hardware is None:
            for f in sorted(path.rglob("*.json")):
                out += lint_file(f, skip_unknown=True)
        else:
            found = [_try(baseline_files, path, hardware), _try(threshold_files, path, hardware)]
            if not any(found):
                raise DiffperfError(f"no baseline or threshold files for platform {hardware!r}", source=str(path))
            out += lint_baselines(path, hardware) if found[0] else []
            out += [x for f in found[1] for x in lint_file(f)]
    return out


def _try(resolve, path: Path, hardware: str) -> list[Path]:
    try:
        return resolve(path, hardware)
    except DiffperfError:
        return []


def lint_baselines(target: BaselineSet | str | Path, hardware: str | None = None) -> list[Finding]:
    """Lint a loaded set (as the plugin does at collection time) or the files a path resolves to."""
    if isinstance(target, BaselineSet):
        docs = [(f, target.raw[f]) for f in target.files]
        out = [x for f, doc in docs for x in lint_baseline_doc(f, doc)]
    else:
        out, docs = [], []
        for f in baseline_files(target, hardware):
            out += lint_file(f)
            doc = _try_parse(f)
            if isinstance(doc, dict):
                docs.append((f, doc))
    return out + _overlaps(docs)


def lint_thresholds(path: str | Path, hardware: str | None = None) -> list[Finding]:
    return [x for f in threshold_files(path, hardware) for x in lint_file(f)]


def _try_parse(path: Path) -> Any:
    try:
        return parse_json(path)[0]
    except DiffperfError:
        return None


def lint_file(path: Path, *, skip_unknown: bool = False) -> list[Finding]:
    """Lint one file, recognised by shape (``skip_unknown``: no finding for other JSON files)."""
    try:
        data, dups = parse_json(path)
    except DiffperfError as exc:
        return [Finding("error", str(path), "", "", _bare(exc))]
    out = [Finding("error", str(path), "", key, "duplicate key (JSON keeps only the last one)") for key in dups]
    if not isinstance(data, dict):
        return out + [Finding("error", str(path), "", "", "expected a JSON object at the top level")]
    if is_threshold_document(data):
        return out + lint_threshold_doc(path, data)
    if "scenarios" in data:
        return out + lint_baseline_doc(path, data)
    if skip_unknown:
        return out
    message = "neither a baseline file (no 'scenarios') nor a threshold file (no 'cases' object)"
    return out + [Finding("error", str(path), "", "", message)]


def _bare(exc: DiffperfError) -> str:
    where = ": ".join(p for p in (exc.source, exc.key) if p)
    return str(exc).removeprefix(f"{where}: ") if where else str(exc)


def _schema(model: type[BaseModel], data: Any, prefix: str = "") -> list[tuple[str, str]]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return describe_errors(exc, prefix)
    return []


def lint_threshold_doc(path: Path, doc: dict[str, Any]) -> list[Finding]:
    return [Finding("error", str(path), "", key, msg) for key, msg in _schema(ThresholdFile, doc)]


def lint_baseline_doc(path: Path, doc: dict[str, Any]) -> list[Finding]:
    """Every finding of one baseline or fragment file."""
    file = str(path)
    out = [
        Finding("warning", file, "", key, "unknown top-level key (kept, not used)")
        for key in doc
        if key not in TOP_LEVEL_KEYS
    ]
    errors = _tolerance_errors(doc)
    if "sampling" in doc:
        errors += _schema(Sampling, doc["sampling"], "sampling")
    elif "tolerances" in doc:
        errors.append(("sampling", "required key is missing (with step_fractions)"))
    out += [Finding("error", file, "", key, msg) for key, msg in errors]
    if (
        isinstance(doc.get("tolerances"), dict)
        and "pr_test" not in doc["tolerances"]
        and "e2e" not in doc["tolerances"]
    ):
        out.append(Finding("warning", file, "", "tolerances", "no 'pr_test' profile (SGLang's default profile)"))
    scenarios = doc["scenarios"]
    if not isinstance(scenarios, dict):
        return out + [Finding("error", file, "", "scenarios", "expected an object of scenarios")]
    for name, entry in scenarios.items():
        out += [Finding(sev, file, name, key, msg) for sev, key, msg in lint_scenario(entry)]
    return out + _lint_overrides(path, doc.get("runner_overrides", {}), scenarios)


def _tolerance_errors(doc: dict[str, Any]) -> list[tuple[str, str]]:
    if "tolerances" not in doc:
        return []
    tol = doc["tolerances"]
    if not isinstance(tol, dict) or not tol:
        return [("tolerances", "expected an object of tolerance profiles")]
    if "e2e" in tol and not isinstance(tol["e2e"], dict):
        return _schema(Tolerances, tol, "tolerances")
    return [e for name, prof in tol.items() for e in _schema(Tolerances, prof, join("tolerances", name))]


def _lint_overrides(path: Path, overrides: Any, scenarios: dict[str, Any]) -> list[Finding]:
    """Override shape, and each overridden scenario as the loader would parse it."""
    try:
        check_runner_overrides(overrides, scenarios, path)
    except DiffperfError as exc:
        return [Finding("error", str(path), "", exc.key or "", _bare(exc))]
    out = []
    for prefix, per_scenario in overrides.items():
        for name, fields in per_scenario.items():
            if isinstance(scenarios[name], dict):
                merged = {**scenarios[name], **fields}
                where = join(join("runner_overrides", prefix), name)
                out += [Finding("error", str(path), name, k, m) for k, m in _schema(ScenarioBaseline, merged, where)]
    return out


def lint_scenario(entry: Any) -> list[tuple[str, str, str]]:
    """(severity, key, message) for one scenario entry."""
    if not isinstance(entry, dict):
        return [("error", "", "expected an object")]
    errors = [("error", key, msg) for key, msg in _schema(ScenarioBaseline, entry)]
    unknown = [k for k in entry if k not in ScenarioBaseline.model_fields]
    out = errors + [("warning", k, "unknown key (kept, not used by the checks)") for k in unknown]
    if errors:
        return out
    s = ScenarioBaseline.model_validate(entry)
    for key in ("expected_e2e_ms", "expected_load_ms"):
        if getattr(s, key) == 0:
            out.append(("warning", key, "is 0: this metric is unguarded"))
    if s.estimated_full_test_time_s is None:
        out.append(("warning", "estimated_full_test_time_s", "missing (SGLang uses it to partition CI suites)"))
    return out + [("warning", key, msg) for key, msg in _consistency(s)]


def _consistency(s: ScenarioBaseline) -> list[tuple[str, str]]:
    """Figures of one scenario that disagree with each other."""
    out = []
    steps = s.steps
    if steps and set(steps) == set(range(len(steps))):
        values = [steps[i] for i in range(len(steps))]
        for key, label, computed in (
            ("expected_avg_denoise_ms", "mean", statistics.fmean(values)),
            ("expected_median_denoise_ms", "median", statistics.median(values)),
        ):
            expected = getattr(s, key)
            if computed > 0 and abs(expected - computed) > AGG_TOLERANCE * computed:
                change = expected / computed - 1
                message = (
                    f"{expected:.2f} differs from the {label} of denoise_step_ms ({computed:.2f}) by {change:+.1%}"
                )
                out.append((key, message))
        denoise = s.stages_ms.get(DENOISING_STAGE)
        total = sum(values)
        if denoise is not None and denoise < total * (1 - DENOISE_SHORT[0]) - DENOISE_SHORT[1]:
            out.append((f"stages_ms.{DENOISING_STAGE}", f"{denoise:.2f} is shorter than its steps ({total:.2f})"))
        if denoise is not None and denoise > total * (1 + DENOISE_LONG[0]) + DENOISE_LONG[1]:
            out.append(
                (
                    f"stages_ms.{DENOISING_STAGE}",
                    f"{denoise:.2f} is over {1 + DENOISE_LONG[0]:g}x its steps ({total:.2f})",
                )
            )
    stages = sum(v for k, v in s.stages_ms.items() if v is not None and k != PER_FRAME_STAGE)
    e2e = s.expected_e2e_ms
    if e2e > 0 and stages > e2e * (1 + STAGES_OVER_E2E[0]) + STAGES_OVER_E2E[1]:
        out.append(
            (
                "stages_ms",
                f"stages add up to {stages:.2f}, {stages / e2e - 1:+.1%} over expected_e2e_ms ({e2e:.2f})",
            )
        )
    return out


def _overlaps(docs: list[tuple[Path, dict[str, Any]]]) -> list[Finding]:
    """Scenarios defined in more than one merged file (the later file wins)."""
    seen: dict[str, Path] = {}
    out = []
    for path, doc in docs:
        scenarios = doc.get("scenarios")
        for name in scenarios if isinstance(scenarios, dict) else ():
            if name in seen:
                out.append(Finding("warning", str(path), name, "", f"also defined in {seen[name]}; this entry wins"))
            seen[name] = path
    return out
