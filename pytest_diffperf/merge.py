"""Merging the ``--diffperf-json`` files of shards (or separate runs) into one, and what is missing.

Every top-level list of objects (``rows``, ``scenarios``, ``servers``, regen candidates, ...) is
concatenated in input order; header fields come from the first file, and those that decide the
verdicts must agree. A scenario present in two inputs is an error, never silently kept twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import DiffperfError
from ._util.jsonfile import kind, read_json_object
from .report import RESULTS_VERSION
from .scenario import ScenarioResult

MUST_AGREE = ("profile", "preset", "hardware", "launcher")
VERDICT_ORDER = ("pass", "unguarded", "skipped", "fail", "error")


def read_results(path: Path) -> dict[str, Any]:
    """A results file, checked for what merging relies on."""
    doc = read_json_object(path)
    if doc.get("version") != RESULTS_VERSION:
        raise DiffperfError(
            f"not a diffperf results file of version {RESULTS_VERSION} (found version {doc.get('version')!r}); "
            "write it with pytest --diffperf-json",
            source=str(path),
            key="version",
        )
    scenarios = doc.get("scenarios")
    if not isinstance(scenarios, list):
        raise DiffperfError(
            f"expected a list of scenario results, got {kind(scenarios)}", source=str(path), key="scenarios"
        )
    for i, entry in enumerate(scenarios):
        if not (
            isinstance(entry, dict) and isinstance(entry.get("case"), str) and isinstance(entry.get("verdict"), str)
        ):
            raise DiffperfError("expected an object with a case and a verdict", source=str(path), key=f"scenarios.{i}")
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
            if entry["case"] in seen:
                raise DiffperfError(f"scenario {entry['case']!r} is also in {seen[entry['case']]}", source=str(path))
            seen[entry["case"]] = path
        for key, value in doc.items():
            if _is_records(value):
                merged.setdefault(key, []).extend(value)
    merged["shard"] = None
    merged["merged_from"] = [str(p) for p, _ in docs]
    return merged


def results_of(merged: dict[str, Any]) -> list[ScenarioResult]:
    fields = ScenarioResult.__dataclass_fields__
    return [ScenarioResult(**{k: v for k, v in s.items() if k in fields}) for s in merged["scenarios"]]


def verdict_counts(results: Sequence[ScenarioResult]) -> str:
    counts = Counter(r.verdict for r in results)
    order = sorted(counts, key=lambda v: (VERDICT_ORDER.index(v) if v in VERDICT_ORDER else len(VERDICT_ORDER), v))
    return f"{len(results)} scenarios: " + ", ".join(f"{counts[v]} {v}" for v in order)


def missing(merged: dict[str, Any], expected: Sequence[str]) -> list[str]:
    """Expected scenarios that ran in no input, in the expected order."""
    ran = {s["case"] for s in merged["scenarios"]}
    return [sid for sid in expected if sid not in ran]


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)
