"""A calibration file (``--diffperf-noise``) from runs that already happened: an A/A run's results files give
the ``ab`` priors, a history folder of static runs the ``static`` ones (``verdicts/calibration.py``: the figures)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DiffperfError
from ..protocol import DENOISING_STAGE
from ..verdicts.calibration import MIN_DAYS, MIN_RUNS, Run, StaticEstimate, largest, round_up, static_estimate
from ..verdicts.metrics import DENOISE_AGGREGATES, E2E, LOAD, stage_of
from ..verdicts.priors import (
    ABPrior,
    ABPriors,
    ABSource,
    Calibration,
    Figure,
    NoisePriors,
    StaticPrior,
    StaticPriors,
    StaticSource,
)
from . import history
from .merge import read_results, results_of, scenarios_with_rows
from .model import ScenarioResult

MIN_PROCESS_PAIRS = 4  # fewer, and the between-process part rests on one to three offsets: said as low confidence
MIN_STAGE_SHARE = 0.01  # a stage under 1 % of e2e is timer noise: its ratio calibrates nothing
JUDGED = ("pass", "fail", "inconclusive")


def ab_key(name: str) -> str | None:
    """The ``ab`` prior an A/B metric's noise calibrates (None: no prior of its own)."""
    if name in (E2E, LOAD):
        return name
    if name in DENOISE_AGGREGATES:
        return "denoise_agg"
    stage = stage_of(name)
    if stage is None:
        return None
    return "denoising_stage" if stage.endswith(DENOISING_STAGE) else "stage"


@dataclass
class Figures:
    """Each prior field's figures per scenario (``{"ab.e2e.between": {"scn": 0.012}}``), as measured."""

    found: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, key: str, scenario: str, value: float) -> None:
        self.found.setdefault(key, {})
        self.found[key][scenario] = max(value, self.found[key].get(scenario, 0.0))

    def rounded(self, key: str) -> float:
        return round_up(largest(self.found[key]).value)

    def figures(self) -> dict[str, Figure]:
        return {key: Figure(measured=(top := largest(v)).value, scenario=top.scenario) for key, v in self.found.items()}


def is_busy(result: ScenarioResult) -> bool:
    """Measured while the machine was busy: its noise is the other jobs', not the runner class's."""
    busy_window = result.interference is not None and any(w.busy for w in result.interference.windows)
    return busy_window or (result.ab is not None and result.ab.busy_pairs > 0)


def ab_figures(paths: Sequence[Path], figures: Figures, notes: list[str], busy: list[str] | None) -> ABSource:
    """Every A/A scenario's own noise per metric (into ``figures``); the run they came from."""
    used: list[ScenarioResult] = []
    interference: list[str] = []
    for path in paths:
        doc = read_results(path)
        provenance = doc.get("provenance")
        line = provenance.get("interference") if isinstance(provenance, dict) else None
        if isinstance(line, str) and line:
            interference.append(f"{path.name}: {line}")
        if doc.get("base") is None:
            raise DiffperfError(
                "not an A/B run (no base build); run A/A with --diffperf-base=current", source=str(path), key="base"
            )
        if doc.get("candidate") != doc.get("base"):
            raise DiffperfError(
                f"an A/B run of two builds (base {doc['base']!r}, candidate {doc.get('candidate')!r}), not an A/A run: "
                "its differences are the change's, not the noise; run A/A with --diffperf-base=current",
                source=str(path),
                key="candidate",
            )
        for result in results_of(doc):
            ab = result.ab
            if ab is None or ab.process_pairs < 2:
                notes.append(f"{result.scenario} ({path}): left out, measured on fewer than 2 process pairs")
            elif is_busy(result) and busy is None:
                notes.append(
                    f"{result.scenario} ({path}): left out, measured while the machine was busy (--include-busy keeps it)"
                )
            else:
                if is_busy(result) and busy is not None:
                    busy.append(f"{result.scenario} ({path.name})")
                used.append(result)
                e2e = ab.metric(E2E)
                e2e_ms = e2e.base_ms if e2e is not None else None
                for m in ab.metrics:
                    key = ab_key(m.name)
                    if key is None or m.between is None or m.within is None:
                        continue
                    if key == "stage" and e2e_ms and (m.base_ms or 0) < MIN_STAGE_SHARE * e2e_ms:
                        continue
                    label = result.scenario if key in (E2E, LOAD, "denoise_agg") else f"{result.scenario} {m.name}"
                    figures.add(f"ab.{key}.between", label, m.between)
                    figures.add(f"ab.{key}.within", label, m.within)
    if not used:
        raise DiffperfError(
            "no scenario measured A/A on 2 or more process pairs on a quiet machine: nothing to calibrate from "
            "(run it again with --diffperf-ab-min-process-pairs 4 when the machine is quiet, or --include-busy)",
            source=", ".join(map(str, paths)),
        )
    return ABSource(
        results=[str(p) for p in paths],
        scenarios=sorted({r.scenario for r in used}),
        process_pairs=min(r.ab.process_pairs for r in used if r.ab is not None),
        request_pairs=sum(m.request_pairs for r in used if r.ab is not None for m in r.ab.metrics if m.name == E2E),
        interference=interference,
    )


def _series(folder: Path, keep_busy: bool) -> tuple[dict[tuple[str, str], list[Run]], set[str], list[str]]:
    """Per (scenario, metric label): each static run's values; the days; the scenarios measured busy."""
    series: dict[tuple[str, str], list[Run]] = {}
    days: set[str] = set()
    busy: list[str] = []
    for run in history.read(folder):
        if run.document.get("base") is not None:
            continue  # an A/B run: its rows are two builds' fresh servers, not a static run's
        day = run.timestamp[:10]
        if not day:
            raise DiffperfError(
                "no provenance timestamp: calibration needs each run's day (write it with --diffperf-history)",
                source=str(run.path),
                key="provenance.timestamp",
            )
        days.add(day)
        entries = {str(s["scenario"]): s for s in scenarios_with_rows(run.document)}
        for result in results_of(run.document):
            if result.verdict not in JUDGED:
                continue
            if is_busy(result):
                busy.append(f"{result.scenario} ({run.path.name})")
                if not keep_busy:
                    continue
            rows: list[dict[str, Any]] = entries[result.scenario]["rows"]
            for label, values in _run_values(rows).items():
                series.setdefault((result.scenario, label), []).append(Run(day, values))
    return series, days, busy


def _run_values(rows: list[dict[str, Any]]) -> dict[str, tuple[float, ...]]:
    """One run's request values per metric label: e2e, load (one per server), each stage."""
    out: dict[str, tuple[float, ...]] = {}
    e2e = tuple(float(r["e2e_ms"]) for r in rows if r.get("e2e_ms", 0) > 0)
    if not e2e:
        return out
    out["e2e"] = e2e
    loads = tuple(sorted({float(r["load_ms"]) for r in rows if r.get("load_ms", 0) > 0}))
    if loads:
        out["load"] = loads
    for stage in sorted({s for r in rows for s in r.get("stages_ms") or {}}):
        times = tuple(float(r["stages_ms"][stage]) for r in rows if r.get("stages_ms", {}).get(stage, 0) > 0)
        if times and statistics.median(times) >= MIN_STAGE_SHARE * statistics.median(e2e):
            out[f"stage[{stage}]"] = times
    return out


def static_key(label: str) -> str:
    if label in ("e2e", "load"):
        return label
    return "denoise" if label.removeprefix("stage[").removesuffix("]").endswith(DENOISING_STAGE) else "stage"


def static_figures(folder: Path, figures: Figures, notes: list[str], busy: list[str] | None) -> StaticSource:
    """Every scenario's static noise per metric over the history's runs (into ``figures``); the history."""
    series, days, measured_busy = _series(folder, busy is not None)
    if busy is not None:
        busy.extend(measured_busy)
    elif measured_busy:
        notes.append(f"left out, measured while the machine was busy: {', '.join(measured_busy)} (--include-busy)")
    estimates: dict[tuple[str, str], StaticEstimate] = {}
    for (scenario, label), found in series.items():
        if len(found) >= MIN_RUNS:
            estimates[(scenario, label)] = static_estimate(found)
    if not estimates:
        raise DiffperfError(
            f"no scenario has {MIN_RUNS} or more static runs measured quiet in this history "
            f"({len(days)} day(s)); expected runs of pytest --diffperf-history {folder}",
            source=str(folder),
        )
    if len(days) < MIN_DAYS:
        raise DiffperfError(
            f"the history's runs are all from {min(days)}: a baseline's drift across days needs runs on at least "
            f"{MIN_DAYS} days",
            source=str(folder),
        )
    for (scenario, label), est in estimates.items():
        key = static_key(label)
        who = scenario if key in ("e2e", "load") else f"{scenario} {label}"
        figures.add(f"static.{key}.baseline", who, est.baseline)
        figures.add(f"static.{key}.process", who, est.process)
        figures.add(f"static.{key}.within", who, 0.0 if key == "load" else est.within)  # load: one per process
        if not est.same_day_pairs:
            notes.append(f"{who}: no day holds two runs, so process is the spread over all days (as baseline)")
    scenarios = sorted({s for s, _ in estimates})
    most = max(len(series[(s, "e2e")]) for s in scenarios if (s, "e2e") in series)
    return StaticSource(
        history=str(folder), scenarios=scenarios, runs=most, days=len(days), first=min(days), last=max(days)
    )


@dataclass(frozen=True)
class Calibrated:
    """The file's content and the notes to print (what was left out, low confidence)."""

    priors: NoisePriors
    notes: list[str]


def calibrate(
    ab: Sequence[Path],
    folder: Path | None,
    runner_class: str | None,
    created: str,
    hardware: str | None = None,
    device: str | None = None,
    include_busy: bool = False,
    note: str | None = None,
) -> Calibrated:
    """The calibration file from an A/A run's results files and/or a history folder of static runs (scenarios
    measured busy left out, or with ``include_busy`` kept and listed in the file); ``runner_class`` None or empty
    is an error once the inputs are read; ``note``: how the runs were made, stored as given."""
    if not ab and folder is None:
        raise DiffperfError("nothing to calibrate from; give an A/A run's results (--ab) and/or a history (--history)")
    figures, notes = Figures(), list[str]()
    busy: list[str] | None = [] if include_busy else None
    ab_source = ab_figures(ab, figures, notes, busy) if ab else None
    static_source = static_figures(folder, figures, notes, busy) if folder is not None else None
    if busy:
        notes.append(f"kept though measured while the machine was busy (--include-busy): {', '.join(busy)}")
    if ab_source is not None and ab_source.process_pairs < MIN_PROCESS_PAIRS:
        notes.append(
            f"low confidence: a scenario measured {ab_source.process_pairs} process pairs; the between-process "
            f"part needs {MIN_PROCESS_PAIRS} or more (--diffperf-ab-min-process-pairs {MIN_PROCESS_PAIRS})"
        )
    if not runner_class:
        raise DiffperfError("the runs name no device; name the runner class", source="--runner-class")
    ab_priors = {
        key: ABPrior(between=figures.rounded(f"ab.{key}.between"), within=figures.rounded(f"ab.{key}.within"))
        for key in ABPriors.model_fields
        if f"ab.{key}.between" in figures.found and _some(figures, f"ab.{key}", ("between", "within"))
    }
    static_priors = {
        key: StaticPrior(**{f: figures.rounded(f"static.{key}.{f}") for f in ("baseline", "process", "within")})
        for key in StaticPriors.model_fields
        if f"static.{key}.baseline" in figures.found and _some(figures, f"static.{key}", ("baseline", "process"))
    }
    priors = NoisePriors(
        ab=ABPriors(**ab_priors),
        static=StaticPriors(**static_priors),
        calibration=Calibration(
            runner_class=runner_class,
            created=created,
            hardware=hardware,
            device=device,
            ab=ab_source,
            static=static_source,
            busy=busy or [],
            note=note,
            figures=figures.figures(),
        ),
    )
    return Calibrated(priors, notes)


def _some(figures: Figures, prefix: str, fields: Sequence[str]) -> bool:
    """Not every figure 0: a prior of no noise is refused, so such a metric keeps its default."""
    return any(figures.rounded(f"{prefix}.{f}") > 0 for f in fields)


def provenance_of(paths: Sequence[Path], folder: Path | None) -> tuple[str | None, str | None]:
    """The hardware and device the runs were measured on (the first file's, or the history's newest)."""
    docs: list[dict[str, Any]] = [read_results(p) for p in paths[:1]]
    if not docs and folder is not None:
        docs = [r.document for r in history.read(folder)[-1:]]
    prov: dict[str, Any] = (docs[0].get("provenance") or {}) if docs else {}
    return prov.get("measured_platform") or prov.get("hardware"), prov.get("device")
