"""The cross-framework serving comparison: each case on each framework, one warmup and N measured requests.

Servers come from the plugin's pool (adjacent runs with equal server settings share one) and every
request runs under its watchdog. A failure is kept in that run's result, printed in full, and the
comparison goes on with the next case.
"""

from __future__ import annotations

import os
import statistics
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._util.git import head_commit
from .._util.text import did_you_mean
from ..cases import Case, CaseFile
from ..errors import DiffperfError
from ..perf.measurement import Measurement
from ..serving.client import RequestError
from ..serving.launchers import Launcher, ServerSpec, get_launcher
from ..serving.measure import Sample, measure
from ..serving.pool import ServerPool
from ..serving.process import ServerError

DEFAULT_FRAMEWORK = "sglang"
KNOWN_SHOWN = 10  # case ids listed when an unknown one has no close match


@dataclass(frozen=True)
class Run:
    """One case on one framework."""

    case: Case
    launcher: Launcher

    @property
    def spec(self) -> ServerSpec:
        return ServerSpec.for_case(self.case, self.launcher.name)

    @property
    def label(self) -> str:
        return f"{self.case.id} ({self.launcher.name})"


def plan_runs(
    case_file: CaseFile, source: Path, case_ids: Sequence[str] | None, frameworks: Sequence[str] | None
) -> tuple[list[Run], list[str]]:
    """The runs in order (framework by framework, cases in file order), and notes on pairs left out.

    Without ``frameworks`` each case runs on the frameworks it lists (``sglang`` when it lists
    none). A named framework runs the cases that list it; one that takes SGLang's serve args also
    runs those that list ``sglang`` or nothing, with that entry.
    """
    cases = _select(case_file, source, case_ids)
    if frameworks:
        launchers = [_launcher(name, "--frameworks", None) for name in dict.fromkeys(frameworks)]
    else:
        found: dict[str, Launcher] = {}
        selected = {case.id for case in cases}
        for index, case in enumerate(case_file.cases):
            for name in (case.frameworks or [DEFAULT_FRAMEWORK]) if case.id in selected else ():
                if name not in found:
                    found[name] = _launcher(name, str(source), f"cases.{index}.frameworks.{name}")
        launchers = list(found.values())
    runs, left_out = [], []
    for launcher in launchers:
        for case in cases:
            listed = list(case.frameworks) or [DEFAULT_FRAMEWORK]
            if launcher.name in listed or (frameworks and launcher.sglang_args and DEFAULT_FRAMEWORK in listed):
                runs.append(Run(case, launcher))
            elif frameworks:
                left_out.append(f"{case.id} ({launcher.name}): the case has no {launcher.name!r} entry")
    if not runs:
        raise DiffperfError(f"no selected case lists any of: {', '.join(frameworks or [])}", source="--frameworks")
    return runs, left_out


def _select(case_file: CaseFile, source: Path, case_ids: Sequence[str] | None) -> list[Case]:
    known = {case.id for case in case_file.cases}
    for case_id in case_ids or []:
        if case_id not in known:
            hint = did_you_mean(case_id, known, list_known=KNOWN_SHOWN)
            raise DiffperfError(f"no case {case_id!r} (--case-ids){hint}", source=str(source), key="cases")
    return [case for case in case_file.cases if not case_ids or case.id in case_ids]


def _launcher(name: str, source: str, key: str | None) -> Launcher:
    try:
        return get_launcher(name)
    except DiffperfError as exc:
        raise DiffperfError(f"{exc} (frameworks: see docs/compare.md)", source=source, key=key) from None


def run_all(
    runs: Sequence[Run],
    pool: ServerPool,
    repeats: int,
    request_timeout: float,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> list[dict[str, Any]]:
    """Every run in order, its result appended whatever happened; the pool's server is stopped at the end."""
    results = []
    try:
        for number, run in enumerate(runs, 1):
            say(f"[{number}/{len(runs)}] {run.label}: {run.case.model}, {run.case.task}")
            result = run_one(run, pool, repeats, request_timeout, warn)
            say(f"  {describe(result)}")
            results.append(result)
    finally:
        pool.release()
    return results


def run_one(
    run: Run, pool: ServerPool, repeats: int, request_timeout: float, warn: Callable[[str], None]
) -> dict[str, Any]:
    """One warmup and ``repeats`` measured requests on the run's server; any failure becomes the result's error."""
    case = run.case.model_copy(update={"perf_warmup_requests": 1, "perf_repeat_requests": repeats})
    missing: list[int] = []

    def on_missing(index: int, error: RequestError) -> None:
        missing.append(index)
        warn(f"{run.label}: no perf record for request {index + 1}: {error.headline()}")

    try:
        server = pool.get(run.spec)
        samples = measure(server, run.launcher, case, case.timeout_s or request_timeout, on_missing)
    except (ServerError, RequestError) as exc:
        crashed = isinstance(exc, ServerError)
        if crashed:
            pool.release()  # dead or hung: the next run starts a fresh one
        warn(f"{run.label}: {exc}")
        error = _with_log(exc.headline(last_log_line=crashed), pool, run.spec)
        return result_row(run.case, run.launcher.name, [], 0, error)
    except Exception as exc:  # noqa: BLE001 (a launcher's own bug must not stop the other cases either)
        pool.release()
        warn(f"{run.label}: {traceback.format_exc()}")
        return result_row(run.case, run.launcher.name, [], 0, f"{type(exc).__name__}: {exc}")
    return result_row(run.case, run.launcher.name, samples, len(missing))


def _with_log(error: str, pool: ServerPool, spec: ServerSpec) -> str:
    log = next((launch.log for launch in reversed(pool.launches) if launch.group == spec.key), None)
    return f"{error} (log: {log})" if log and Path(log).exists() else error


def result_row(
    case: Case, framework: str, samples: Sequence[Sample], missing: int, error: str | None = None
) -> dict[str, Any]:
    """One result row: medians of the client-side times and of the server's perf records."""
    latencies = [round(s.client_ms / 1000, 3) for s in samples]
    records = [s.record for s in samples if s.record is not None]
    measured = Measurement.from_records(records)
    stages = measured.stage_samples()
    steps = [ms for per_request in measured.steps for ms in per_request]
    return {
        "case_id": case.id,
        "framework": framework,
        "model": case.model,
        "task": case.task,
        "error": error,
        "latency_s": _median(latencies),
        "latency_samples_s": latencies,
        "server_latency_s": _median([round(ms / 1000, 3) for ms in measured.e2e_ms]),
        "server_stage_medians_ms": {name: round(statistics.median(v), 3) for name, v in stages.items()} or None,
        "median_denoise_step_ms": _median(steps),
        "missing_perf_records": missing,
    }


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def describe(row: dict[str, Any]) -> str:
    """A result on one line, for the progress output."""
    if row["error"]:
        return f"ERROR: {row['error']}"
    text = f"latency {row['latency_s']:.3f} s (median of {len(row['latency_samples_s'])})"
    if row["server_latency_s"] is not None:
        text += f", server {row['server_latency_s']:.3f} s"
    if row["missing_perf_records"]:
        text += f", {row['missing_perf_records']} perf record(s) missing"
    return text


def comparison_document(results: list[dict[str, Any]], repeats: int, timestamp: datetime) -> dict[str, Any]:
    """The results file: SGLang's comparison-results.json layout."""
    return {
        "timestamp": timestamp.astimezone(timezone.utc).isoformat(),
        "commit_sha": head_commit() or os.environ.get("GITHUB_SHA", "unknown"),
        "measurement_repeats": repeats,
        "results": results,
    }
