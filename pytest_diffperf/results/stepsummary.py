"""The run as GitHub-flavoured Markdown, for ``$GITHUB_STEP_SUMMARY`` (the pytest run and ``diffperf merge``).

Totals first, then a table of the failing checks (the regressions) with their change and the stage
behind each, the reasons of the other scenarios that did not pass, every scenario in one table, and
each scenario's checks in a collapsed ``<details>``; the provenance closes it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..perf.limits import MEMORY_KINDS
from ..protocol import DENOISING_STAGE
from .model import OUTCOMES, CheckRecord, ScenarioResult, nothing_judged
from .nextsteps import RunContext, ground_truth_next, inconclusive_next, not_passed
from .provenance import Provenance
from .tables import (
    change,
    e2e_change,
    e2e_of,
    failing_checks,
    label,
    limiting_text,
    noise_text,
    num,
    pct,
    reason,
)

ICONS = {
    "pass": "✅",
    "fail": "❌",
    "error": "💥",
    "inconclusive": "❔",
    "unguarded": "⚠️",
    "unjudged": "🔘",
    "skipped": "⏭️",
}
DENOISE_KINDS = frozenset({"step", "denoise_agg", "per_frame"})


def totals(results: Sequence[ScenarioResult]) -> str:
    """``5 scenarios: 4 pass, 1 fail`` (every outcome the model knows, in its order)."""
    counts = Counter(r.outcome for r in results)
    known = [o for o in OUTCOMES if counts[o]] + sorted(o for o in counts if o not in OUTCOMES)
    noun = "scenario" if len(results) == 1 else "scenarios"
    return f"{len(results)} {noun}: " + (", ".join(f"{counts[o]} {o}" for o in known) or "none")


def stage_of(check: CheckRecord, result: ScenarioResult) -> str:
    """The stage behind a failing check: its own, the denoising stage for step checks, and for e2e and
    load the stage that grew the most (in ms) in this scenario."""
    if check.kind == "stage":
        return check.name.removeprefix("stage[").removesuffix("]")
    if check.kind in DENOISE_KINDS:
        return DENOISING_STAGE
    if check.kind in MEMORY_KINDS:
        return "-"
    grown = [
        (c.actual - c.expected, c.name.removeprefix("stage[").removesuffix("]"))
        for c in result.checks
        if c.kind == "stage" and c.actual is not None
    ]
    delta, stage = max(grown, default=(0.0, ""))
    return f"{stage} {delta:+.0f} ms" if stage and delta > 0 else "-"


def markdown(
    results: Sequence[ScenarioResult],
    header: Mapping[str, Any],
    provenance: Provenance | Mapping[str, Any] | None = None,
    notes: Sequence[str] = (),
    *,
    run: RunContext | None = None,
) -> str:
    """The whole step summary (``run``: what the ``next:`` lines name; default: the header's files)."""
    run = run if run is not None else RunContext.of(header)
    outcomes: Counter[str] = Counter(r.outcome for r in results)
    worst = next((o for o in ("error", "fail", "inconclusive") if outcomes[o]), "pass")
    where = f"profile `{header.get('profile')}` on `{header.get('hardware')}`"
    title = f"### {ICONS.get(worst, '')} diffperf: {where}"
    if nothing_judged(results):  # never a green tick for what was not checked
        title = f"### {ICONS['skipped']} diffperf: nothing judged ({totals(results)}): {where}"
    prov = provenance if isinstance(provenance, Provenance) else _provenance(provenance)
    lines = [title, "", f"**{totals(results)}**" + (f" · {prov.line()}" if prov else ""), ""]
    lines += [f"> {note}" for note in notes] + ([""] if notes else [])
    lines += _regressions(results)
    lines += _not_passed(results, run)
    lines += ["#### Scenarios", "", "| | scenario | outcome | e2e ms | expected | Δ | limiting check |"]
    lines.append("|---|---|---|---:|---:|---:|---|")
    for r in results:
        actual, expected = e2e_of(r)
        lines.append(
            f"| {ICONS.get(r.outcome, '•')} | {_cell(r.scenario)} | {r.outcome} | {num(actual)} | {num(expected)} | "
            f"{pct(e2e_change(r))} | {_cell(limiting_text(r))} |"
        )
    lines.append("")
    for r in results:
        lines += _details(r)
    if prov is not None:
        lines += ["<details><summary>Provenance</summary>", "", "| field | value |", "|---|---|"]
        lines += [f"| {name} | {_cell(value)} |" for name, value in prov.pairs()] + ["", "</details>", ""]
    return "\n".join(lines) + "\n"


def _not_passed(results: Sequence[ScenarioResult], run: RunContext) -> list[str]:
    """Every scenario that did not pass with its whole reason (an output mismatch with its ``next:``), then
    ``next:`` for the inconclusive ones."""
    shown = not_passed(results)
    if not shown:
        return []
    lines = ["#### Not passed", "", "| scenario | outcome | reason |", "|---|---|---|"]
    for r in shown:
        why = reason(r)
        if r.consistency_status == "fail":
            why += f"; next, if the output change is intended: `{ground_truth_next(r.scenario, run)}`"
        lines.append(f"| {_cell(r.scenario)} | {r.outcome} | {_cell(why)} |")
    lines.append("")
    unsure = [r.scenario for r in shown if r.verdict == "inconclusive"]
    steps = inconclusive_next(unsure, run)
    if steps:
        lines += [f"**next**, for the inconclusive scenario(s) ({', '.join(unsure)}):", ""]
        lines += [f"- {what}: `{how}`" for what, how in steps] + [""]
    return lines


def _regressions(results: Sequence[ScenarioResult]) -> list[str]:
    rows = [(r, c) for r in results if r.verdict == "fail" for c in failing_checks(r)]
    regressed = [(r, m) for r in results if r.ab is not None for m in r.ab.metrics if m.verdict == "regressed"]
    if not rows and not regressed:
        return []
    lines = ["#### Regressions", "", "| scenario | check | actual | expected | Δ | limit | allowed | stage |"]
    lines.append("|---|---|---:|---:|---:|---:|---:|---|")
    for r, m in regressed:  # A/B: the candidate against the base, the ratio's interval against the tolerance
        interval = f" [{pct(m.low - 1)}, {pct(m.high - 1)}]" if m.low is not None and m.high is not None else ""
        lines.append(
            f"| {_cell(r.scenario)} | A/B {_cell(label(m.name))} | {num(m.estimated_candidate_ms())} ms | {num(m.base_ms)} (base) | "
            f"{pct(m.ratio - 1) if m.ratio is not None else '-'}{interval} | - | ±{m.tolerance:.1%} | "
            f"{_cell(label(m.name)) if m.name.startswith('stage[') else '-'} |"
        )
    for r, c in rows:
        unit = "MiB" if c.kind in MEMORY_KINDS else "ms"
        actual = f"{c.actual:.2f} {unit}" if c.actual is not None else "missing"
        lines.append(
            f"| {_cell(r.scenario)} | {_cell(c.name)} | {actual} | {c.expected:.2f} | {pct(change(c.actual, c.expected))} "
            f"| {c.limit:.2f} | {pct(change(c.limit, c.expected))} | {_cell(stage_of(c, r))} |"
        )
    return [*lines, ""]


def _details(r: ScenarioResult) -> list[str]:
    actual, _ = e2e_of(r)
    delta = e2e_change(r)
    e2e = f", e2e {num(actual)} ms" + (f" ({pct(delta)})" if delta is not None else "") if actual else ""
    lines = [
        f"<details><summary>{ICONS.get(r.outcome, '•')} <b>{_html(r.scenario)}</b>: {r.outcome}{e2e}</summary>",
        "",
    ]
    why = reason(r)
    if why:
        lines += [f"Reason: {_cell(why)}", ""]
    if r.checks:
        lines += ["| check | actual | expected | Δ | limit | verdict |", "|---|---:|---:|---:|---:|---|"]
        lines += [
            f"| {_cell(c.name)} | {num(c.actual)} | {c.expected:.2f} | {pct(change(c.actual, c.expected))} | "
            f"{c.limit:.2f} | {r.check_verdict(c)}{_cell(noise_text(r, c.name))} |"
            for c in r.checks
        ]
        lines.append("")
    if r.ab is not None:
        lines += [f"A/B against `{_cell(r.ab.base)}`: {_cell(r.ab.headline)}", ""]
    if r.consistency:
        lines += [f"Output: {r.consistency.get('status')}" + _worst(r.consistency), ""]
    if r.server:
        lines += [f"Server log: `{r.server.log}`", ""]
    return [*lines, "</details>", ""]


def _worst(consistency: Mapping[str, Any]) -> str:
    worst = consistency.get("worst") or {}
    return (" (" + ", ".join(f"{k} {v}" for k, v in worst.items()) + ")") if worst else ""


def _provenance(data: Mapping[str, Any] | None) -> Provenance | None:
    return Provenance.model_validate(dict(data)) if data else None


def _cell(text: str) -> str:
    return _html(text).replace("|", "\\|").replace("\n", " ")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
