"""Merging the ``--diffperf-json`` files of shards (or separate runs) into one, and what is missing.

Every top-level list of objects (``rows``, ``scenarios``, ``servers``, regen candidates, ...) is
concatenated in input order; header fields come from the first file, and those that decide the
verdicts must agree. A scenario present in two inputs is an error, never silently kept twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from .._util.jsonfile import describe_type, read_json_object, validate
from ..errors import DiffperfError
from ..serving.record import ServerRecord
from .model import (
    CONSISTENCY_STATUSES,
    OLD_STATUSES,
    OUTCOMES,
    READABLE_VERSIONS,
    RESULTS_VERSION,
    STATUS_VERSION,
    InconclusiveMode,
    ScenarioResult,
    fails_run,
)
from .provenance import Provenance
from .rows import RequestRow

MUST_AGREE = ("profile", "preset", "hardware", "launcher", "inconclusive")


def read_results(path: Path) -> dict[str, Any]:
    """A results file, checked for what merging relies on."""
    doc = read_json_object(path)
    if type(doc.get("version")) is not int or doc["version"] not in READABLE_VERSIONS:  # 3.0 or true is no version
        versions = " to ".join(map(str, (READABLE_VERSIONS[0], RESULTS_VERSION)))
        raise DiffperfError(
            f"not a diffperf results file of version {versions} (found version {doc.get('version')!r}); "
            "write it with pytest --diffperf-json",
            source=str(path),
            key="version",
        )
    scenarios = doc.get("scenarios")
    if not isinstance(scenarios, list):
        raise DiffperfError(
            f"expected a list of scenario results, got {describe_type(scenarios)}", source=str(path), key="scenarios"
        )
    for i, entry in enumerate(scenarios):
        _read_status(entry, doc["version"], path, f"scenarios.{i}")
        scenario_of(entry, path, f"scenarios.{i}")
    for key, model in (("rows", RequestRow), ("servers", ServerRecord)):
        records = doc.get(key, [])
        if not isinstance(records, list):
            raise DiffperfError(f"expected a list of objects, got {describe_type(records)}", source=str(path), key=key)
        for i, record in enumerate(records):
            validate(model, record, path, f"{key}.{i}")
    if doc.get("provenance") is not None:
        validate(Provenance, doc["provenance"], path, "provenance")
    modes = get_args(InconclusiveMode)
    doc.setdefault("inconclusive", "report")  # written before the run recorded it: the default
    if doc["inconclusive"] not in modes:
        raise DiffperfError(
            f"expected one of {', '.join(modes)}, got {doc['inconclusive']!r}", source=str(path), key="inconclusive"
        )
    return doc


def merge(docs: Sequence[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    if not docs:
        raise DiffperfError("no results files to merge")
    first_path, first = docs[0]
    merged: dict[str, Any] = {k: v for k, v in first.items() if not _is_records(v)}
    seen: dict[str, Path] = {}
    for path, doc in docs:
        for key in MUST_AGREE:
            if doc.get(key) != first.get(key):
                raise DiffperfError(
                    f"{key} is {doc.get(key)!r} here but {first.get(key)!r} in {first_path}: "
                    "merge only results of one suite run the same way",
                    source=str(path),
                    key=key,
                )
        for entry in doc["scenarios"]:
            if entry["scenario"] in seen:
                raise DiffperfError(
                    f"scenario {entry['scenario']!r} is also in {seen[entry['scenario']]}", source=str(path)
                )
            seen[entry["scenario"]] = path
        for key, value in doc.items():
            if _is_records(value):
                merged.setdefault(key, []).extend(value)
    merged["shard"] = None
    merged["version"] = min(doc["version"] for _, doc in docs)  # what every input carries
    merged["merged_from"] = [str(p) for p, _ in docs]
    return merged


def _read_status(entry: Any, version: int, path: Path, key: str) -> None:
    """A scenario's consistency status in this version's words: a file before version 4 says passed and failed,
    read as pass and fail (a merged file of older and newer inputs carries the oldest version, in the new words)."""
    consistency = entry.get("consistency") if isinstance(entry, dict) else None
    if not isinstance(consistency, dict):
        return  # none compared, or not an object: the scenario's own validation says so
    status = consistency.get("status")
    if version < STATUS_VERSION and isinstance(status, str):
        status = consistency["status"] = OLD_STATUSES.get(status, status)
    if status not in CONSISTENCY_STATUSES:
        known = ", ".join(map(repr, CONSISTENCY_STATUSES[:-1])) + f" or {CONSISTENCY_STATUSES[-1]!r}"
        got = repr(status) if isinstance(status, str) else describe_type(status)
        if isinstance(status, str) and status in OLD_STATUSES:
            got += f" (version {version} files say {OLD_STATUSES[status]!r})"
        raise DiffperfError(f"expected {known}, got {got}", source=str(path), key=f"{key}.consistency.status")


def scenario_of(entry: Any, path: Path, key: str) -> ScenarioResult:
    """One scenario of a results file; its verdicts must be known and its outcome follow from them."""
    if not isinstance(entry, dict):
        raise DiffperfError(
            f"expected a scenario result (an object), got {describe_type(entry)}", source=str(path), key=key
        )
    fields = {k: v for k, v in entry.items() if k != "outcome"}
    result: ScenarioResult = validate(ScenarioResult, fields, path, key)  # its rows and servers strictly
    if "outcome" in entry and entry["outcome"] != result.outcome:
        expected = f"one of {', '.join(OUTCOMES)}" if entry["outcome"] not in OUTCOMES else repr(result.outcome)
        raise DiffperfError(
            f"outcome {entry['outcome']!r} does not follow from verdict {result.verdict!r} and consistency "
            f"{result.consistency_status!r}: expected {expected}",
            source=str(path),
            key=f"{key}.outcome",
        )
    return result


def scenarios_with_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A results document's scenario entries, each with its request rows: the file stores a row once, in the
    top-level ``rows`` (an entry that holds its own, as version 2 files before the history did, keeps them)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for row in doc.get("rows") or []:
        rows.setdefault(str(row.get("scenario")), []).append(row)
    return [s if "rows" in s else {**s, "rows": rows.get(str(s["scenario"]), [])} for s in doc["scenarios"]]


def results_of(merged: dict[str, Any]) -> list[ScenarioResult]:
    """The scenarios of merged, already checked, results files."""
    return [
        ScenarioResult.model_validate({k: v for k, v in s.items() if k != "outcome"})
        for s in scenarios_with_rows(merged)
    ]


def failing(merged: dict[str, Any], results: Sequence[ScenarioResult]) -> list[ScenarioResult]:
    """The results that fail the run, under the inconclusive mode the runs recorded."""
    return [r for r in results if fails_run(r.outcome, merged["inconclusive"])]


def outcome_counts(results: Sequence[ScenarioResult]) -> str:
    counts = Counter(r.outcome for r in results)
    return f"{len(results)} scenarios: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES if counts[o])


def missing(merged: dict[str, Any], expected: Sequence[str]) -> list[str]:
    """Expected scenarios that ran in no input, in the expected order."""
    ran = {s["scenario"] for s in merged["scenarios"]}
    return [sid for sid in expected if sid not in ran]


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)
