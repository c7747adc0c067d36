"""The results as tables: the failing checks of a scenario, the run's summary, its Markdown form."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._util.text import format_table
from ..perf.limits import CheckResult
from .model import ScenarioResult


def format_failures(results: Sequence[CheckResult]) -> str:
    """A table of the failing and missing checks ('' when none)."""
    bad = [r for r in results if not r.passed]
    if not bad:
        return ""
    rows = [("check", "actual", "expected", "limit", "rel", "pad", "unit")]
    for r in bad:
        c = r.check
        actual = "missing" if r.verdict == "missing" or r.actual is None else f"{r.actual:.2f}"
        rows.append((c.name, actual, f"{c.expected:.2f}", f"{c.limit:.2f}", f"{c.rel:.1%}", f"{c.pad:g}", c.unit))
    return "\n".join(format_table(rows))


def summary_table(results: Iterable[ScenarioResult]) -> list[list[str]]:
    """A header row, then one row per scenario; an ``output`` column when outputs were compared."""
    results = list(results)
    compared = any(r.consistency for r in results)
    rows = [["scenario", "e2e ms", "expected", "limit", "worst check", "outcome", *["output"] * compared]]
    for result in results:
        e2e = result.check("e2e")
        worst = result.worst()
        worst_text = f"{worst.name} {(worst.actual or 0) / worst.limit:.0%} of limit" if worst else "-"
        output = [(result.consistency_status or "-").upper()] if compared else []
        rows.append(
            [
                result.scenario,
                _num(e2e.actual if e2e else result.measured.get("e2e_ms")),
                _num(e2e.expected if e2e else None),
                _num(e2e.limit if e2e else None),
                worst_text,
                result.outcome.upper(),
                *output,
            ]
        )
    return rows


def markdown(table: Sequence[Sequence[str]], header: Mapping[str, Any]) -> str:
    title = f"### diffperf: profile `{header.get('profile')}` on `{header.get('hardware')}`\n\n"
    lines = ["| " + " | ".join(table[0]) + " |", "|" + "---|" * len(table[0])]
    lines += ["| " + " | ".join(row) + " |" for row in table[1:]]
    return title + "\n".join(lines) + "\n\n"


def _num(value: float | None) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) else "-"
