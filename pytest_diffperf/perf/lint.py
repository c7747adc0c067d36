"""Lint baseline files: every schema error, plus inconsistencies that loading accepts.

Warnings (documented in docs/baselines.md): unguarded e2e/load, missing test-time estimate,
aggregates that disagree with a full step map, DenoisingStage far from the sum of its steps,
stages adding up to more than e2e, unknown keys, a scenario defined in two merged files.
"""

from __future__ import annotations

import statistics
from collections.abc import Collection
from pathlib import Path
from typing import Any

from .._util.findings import Finding, Severity, read_for_lint
from .._util.jsonfile import json_path
from ..platforms import Platform
from ..protocol import DENOISING_STAGE, PER_FRAME_STAGE
from .baselines import BaselineSet, baseline_files, load_baselines, select_scenarios
from .schema import ScenarioBaseline, baseline_problems, is_flat, scenario_problems

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


def lint_baselines(
    target: BaselineSet | str | Path, hardware: Platform | None = None, *, selected: Collection[str] | None = None
) -> list[Finding]:
    """Lint a loaded set (as the plugin does at collection time) or the files a path resolves to.

    With ``selected`` (a run's scenario set), or a path and ``hardware`` (the scenarios ``select_scenarios``
    judges there), a scenario's warnings count only for the scenarios selected; errors and findings of a
    file as a whole always do.
    """
    if isinstance(target, BaselineSet):
        docs = [(f, target.raw[f]) for f in target.files]
        out = [x for f, doc in docs for x in lint_baseline_doc(f, doc)]
    else:
        out, docs = [], []
        for f in baseline_files(target, hardware):
            doc, problems = read_for_lint(f)
            out += problems
            if doc is not None:
                out += lint_baseline_doc(f, doc)
                docs.append((f, doc))
        if hardware is not None and selected is None and not any(x.severity == "error" for x in out):
            selected = select_scenarios(load_baselines(target, hardware), {}, hardware)
    if selected is not None:
        keep = set(selected)
        out = [x for x in out if x.severity == "error" or not x.scenario or x.scenario in keep]
    return out + _overlaps(docs)


def lint_baseline_doc(path: Path, doc: dict[str, Any]) -> list[Finding]:
    """Every finding of one baseline or fragment file: the loader's schema problems, then the warnings."""
    file = str(path)
    out = [
        Finding("warning", file, "", key, "unknown top-level key (kept, not used)")
        for key in doc
        if key not in TOP_LEVEL_KEYS
    ]
    problems = baseline_problems(doc)
    for problem in problems:
        entry = json_path("scenarios", problem.scenario)  # a scenario's own keys are named within it
        key = "" if problem.path == entry else problem.path.removeprefix(entry + ".")
        out.append(Finding("error", file, problem.scenario, key, problem.message))
    tolerances = doc.get("tolerances")
    if isinstance(tolerances, dict) and "pr_test" not in tolerances and not is_flat(tolerances):
        out.append(Finding("warning", file, "", "tolerances", "no 'pr_test' profile (SGLang's default profile)"))
    scenarios = doc.get("scenarios")
    if isinstance(scenarios, dict):
        failed = {p.scenario for p in problems if p.path.startswith("scenarios.")}
        for name, entry in scenarios.items():
            if isinstance(entry, dict):
                warnings = _unknown_keys(entry) + (
                    [] if name in failed else _warnings(ScenarioBaseline.model_validate(entry))
                )
                out += [Finding(sev, file, name, key, msg) for sev, key, msg in warnings]
    return out


def lint_scenario(entry: Any) -> list[tuple[Severity, str, str]]:
    """(severity, key, message) for one scenario entry: its schema problems and unknown keys, else its warnings."""
    if not isinstance(entry, dict):
        return [("error", "", "expected an object")]
    errors: list[tuple[Severity, str, str]] = [("error", key, msg) for key, msg in scenario_problems(entry)]
    return errors + _unknown_keys(entry) + ([] if errors else _warnings(ScenarioBaseline.model_validate(entry)))


def _unknown_keys(entry: dict[str, Any]) -> list[tuple[Severity, str, str]]:
    return [
        ("warning", k, "unknown key (kept, not used by the checks)")
        for k in entry
        if k not in ScenarioBaseline.model_fields
    ]


def _warnings(s: ScenarioBaseline) -> list[tuple[Severity, str, str]]:
    """Unguarded metrics, a missing test-time estimate, figures that disagree with each other."""
    out: list[tuple[Severity, str, str]] = []
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
