"""The results as terminal tables: a scenario's failing checks, and the run's summary.

Words are the outcome vocabulary of :mod:`.model` (``pass``, ``fail``, ``error``, ...), as in the
results file, JUnit and ``diffperf merge``. Changes are ``actual / expected - 1`` (``Δ``); a check's
``allowed`` change is ``limit / expected - 1``. A scenario's *limiting check* is the one that uses
the most of its tolerance band, ``(actual - expected) / (limit - expected)``: a failing check first,
else the time check closest to its limit; a memory check only when it fails or has grown past expected
and is closer to its limit than every time check. A check's verdict is the one it was judged by (the run's
noise interval, where it judged one, replaces the limit formula's), so an inconclusive scenario's limiting
check is an inconclusive one; an A/B run's cell is the metric that decided its verdict.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._util.text import format_table
from ..perf.limits import MEMORY_KINDS, CheckResult
from .model import CheckRecord, ScenarioResult
from .stale import stale_note

SAMPLES_SHOWN = 8  # samples listed per check in a failure message (the rest counted)
REASON_WIDTH = 120
SUMMARY_HEADER = ("scenario", "outcome", "e2e ms", "expected", "Δ", "limiting check", "reason")


def pct(value: float | None) -> str:
    """A change as a signed percentage (``+12.3%``), ``-`` when unknown."""
    return "-" if value is None or not math.isfinite(value) else f"{value:+.1%}"


def num(value: float | None) -> str:
    return f"{value:.2f}" if isinstance(value, (int, float)) and math.isfinite(value) else "-"


def change(actual: float | None, expected: float) -> float | None:
    """``actual / expected - 1`` (None without an actual value or a positive expected one)."""
    return actual / expected - 1 if actual is not None and expected > 0 else None


def format_failures(
    results: Sequence[CheckResult], samples: Mapping[str, Sequence[float]] | None = None, statistic: str = "median"
) -> str:
    """A table of the failing and missing checks ('' when none): actual, expected, Δ, limit, how far over it;
    then, given the samples, how each actual value was formed (``statistic`` of N samples, the samples)."""
    bad = [r for r in results if not r.passed]
    if not bad:
        return ""
    rows = [("check", "actual", "expected", "Δ", "limit", "allowed", "over limit", "rel", "pad", "unit")]
    for r in bad:
        c = r.check
        no_baseline = c.required and c.expected <= 0  # the baseline is what is missing
        missing = no_baseline or r.verdict == "missing" or r.actual is None
        rows.append(
            (
                c.name,
                f"{r.actual:.2f}" if r.actual is not None and (no_baseline or not missing) else "missing",
                "missing" if no_baseline else f"{c.expected:.2f}",
                "-" if missing or r.actual is None else pct(change(r.actual, c.expected)),
                "-" if no_baseline else f"{c.limit:.2f}",
                "-" if no_baseline else pct(change(c.limit, c.expected)),
                "-" if missing or r.actual is None else pct(change(r.actual, c.limit)),
                f"{c.rel:.1%}",
                f"{c.pad:g}",
                c.unit,
            )
        )
    lines = format_table(rows)
    lines += [r.message for r in bad if r.check.required and r.check.expected <= 0]
    formed = [_formed(r, samples.get(r.check.name, ()), statistic) for r in bad if samples is not None]
    formed = [line for line in formed if line]
    if formed:
        lines += ["", "how the actual values were formed:", *formed]
    return "\n".join(lines)


def _formed(r: CheckResult, samples: Sequence[float], statistic: str) -> str:
    if r.actual is None or not samples:
        return ""
    shown = ", ".join(f"{x:.2f}" for x in samples[:SAMPLES_SHOWN])
    more = f", ... ({len(samples)} in all)" if len(samples) > SAMPLES_SHOWN else ""
    what = "server start" if r.check.kind == "load" else "request"
    of = f"{statistic} of {len(samples)} {what}s" if len(samples) > 1 else f"1 {what}"
    spread = ""
    if len(samples) > 1 and min(samples) > 0:
        spread = f"; spread {min(samples) / r.actual - 1:+.1%} .. {max(samples) / r.actual - 1:+.1%}"
    return f"  {r.check.name} = {of}: {shown}{more} {r.check.unit}{spread}"


def band_share(c: CheckRecord) -> float:
    """How much of its tolerance band a check uses: 0 at expected, 1 at the limit (inf: over a zero band)."""
    if c.actual is None:
        return math.inf
    band = c.limit - c.expected
    if band <= 0:
        return math.inf if c.actual > c.limit else 0.0
    return (c.actual - c.expected) / band


def limiting(result: ScenarioResult) -> CheckRecord | None:
    """The check that limits the scenario, by its verdict as judged (:meth:`.ScenarioResult.check_verdict`): a
    failing or missing one first (time before memory on a tie); in an inconclusive scenario the inconclusive check
    whose interval reaches furthest past its limit; else the time check closest to its limit, unless a memory check
    has grown past expected and is closer still."""
    judged = [
        c
        for c in result.checks
        if result.check_verdict(c) != "unguarded" and (c.actual is not None or c.verdict == "missing")
    ]
    failing = [c for c in judged if result.check_verdict(c) in ("fail", "missing")]
    if failing:
        return max(failing, key=lambda c: (band_share(c), c.kind not in MEMORY_KINDS))
    unsure = [c for c in judged if result.check_verdict(c) == "inconclusive"]
    if unsure and result.verdict == "inconclusive":
        return max(unsure, key=lambda c: _reach(result, c))
    timing = max((c for c in judged if c.kind not in MEMORY_KINDS), key=band_share, default=None)
    memory = max((c for c in judged if c.kind in MEMORY_KINDS), key=band_share, default=None)
    if memory is not None and band_share(memory) > 0 and (timing is None or band_share(memory) > band_share(timing)):
        return memory
    return timing or memory


def _reach(result: ScenarioResult, c: CheckRecord) -> float:
    """How far past its limit a check's interval reaches, in tolerance bands (its upper end's band share)."""
    noisy = next((n for n in result.noise.checks if n.name == c.name), None) if result.noise else None
    return band_share(c.model_copy(update={"actual": noisy.high})) if noisy is not None else band_share(c)


def check_text(c: CheckRecord) -> str:
    """``e2e +12.3% (allowed +150.0%)``: the check's change, and the change its limit allows."""
    if c.actual is None:
        return f"{c.name} missing"
    return f"{c.name} {pct(change(c.actual, c.expected))} (allowed {pct(change(c.limit, c.expected))})"


def failing_checks(result: ScenarioResult) -> list[CheckRecord]:
    """The checks that failed or are missing, by their verdict as judged (a timing check the run's noise passed
    is not one)."""
    return [c for c in result.checks if result.check_verdict(c) in ("fail", "missing")]


def reason(result: ScenarioResult) -> str:
    """Why a scenario did not pass, on one line, whole ('' for a pass): the failing checks' changes over their
    allowances, the error's or the verdict's first line, and the output mismatch (first when the performance
    verdict did not fail it)."""
    outcome = result.outcome
    if outcome == "pass":
        return "; ".join(p for p in (stale_note(result), unreported_text(result)) if p)
    parts = []
    bad = failing_checks(result) if result.verdict == "fail" else []
    output = "output: " + output_reason(result.consistency or {}) if result.consistency_status == "fail" else ""
    if output and not bad:
        parts.append(output)  # the output failed it: that first
    if bad:
        listed = ", ".join(_over(c) for c in bad[:3])
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        parts.append(f"{len(bad)} check(s) over: {listed}{more}")
    elif result.verdict != "pass" or outcome != "fail":
        parts.append(_first_line(result.message) or result.verdict)
    if output and bad:
        parts.append(output)
    parts.append(unreported_text(result))
    return "; ".join(p for p in parts if p)


def unreported_text(result: ScenarioResult) -> str:
    """The memory checks not made for want of the server's figures, in words ('' when none)."""
    keys = result.unreported
    return f"not reported by the server: {len(keys)} memory check(s) not made ({', '.join(keys)})" if keys else ""


def unreported_line(results: Iterable[ScenarioResult]) -> str | None:
    """The run's line on memory the baselines hold and the server did not report (None when there is none)."""
    missing = [r for r in results if r.unreported]
    if not missing:
        return None
    keys = sorted({k for r in missing for k in r.unreported})
    count = sum(len(r.unreported) for r in missing)
    return (
        f"not reported by the server: {count} memory check(s) not made in {len(missing)} scenario(s) "
        f"({', '.join(keys)}): the baseline's figures went unjudged"
    )


def output_reason(consistency: Mapping[str, Any]) -> str:
    """An output mismatch: each failed metric's value against its threshold, and the frame
    (``ssim 0.4100 (needs >= 0.95) on frame mid (index 3)``); else the message's first line."""
    thresholds = consistency.get("thresholds") or {}
    found = []
    for frame in consistency.get("frames") or []:
        where = f"frame {frame['label']} (index {frame['index']})" if frame.get("label") else "the image"
        for name in frame.get("failed") or []:
            sign = "<=" if name == "mad" else ">="
            bound = thresholds.get(name)
            value = frame.get(name)
            shown = f"{value:.4f}" if isinstance(value, (int, float)) else str(value)
            found.append(
                f"{name} {shown} (needs {sign} {bound:g}) on {where}" if bound is not None else f"{name} on {where}"
            )
    if found:
        return ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return _first_line(str(consistency.get("message", ""))).removeprefix("CONSISTENCY: ")


def _over(c: CheckRecord) -> str:
    """``e2e +40.0% > +10.0%``: a failing check's change over the change its limit allows."""
    if c.actual is None:
        return f"{c.name} missing"
    return f"{c.name} {pct(change(c.actual, c.expected))} > {pct(change(c.limit, c.expected))}"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def brief(text: str, width: int = REASON_WIDTH) -> str:
    """``text`` cut at a word before ``width``, ending ``… (below)`` when cut (the whole text follows the table)."""
    if len(text) <= width:
        return text
    cut = text[: width - len(" … (below)")].rsplit(" ", 1)[0].rstrip(",;:")
    return f"{cut} … (below)"


def ab_text(result: ScenarioResult) -> str:
    """An A/B run's deciding metric (:meth:`.ABRecord.deciding`) on one line, with its own estimate, interval and
    verdict: ``A/B DenoisingStage +190.2% [+140.0%, +250.0%] regressed`` ('' without an A/B run)."""
    ab = result.ab
    if ab is None:
        return ""
    m = ab.deciding()
    if m is None or m.ratio is None:
        return f"A/B {ab.verdict}"
    interval = f" [{pct(m.low - 1)}, {pct(m.high - 1)}]" if m.low is not None and m.high is not None else ""
    return f"A/B {label(m.name)} {pct(m.ratio - 1)}{interval} {m.verdict}"


def label(name: str) -> str:
    """A metric's name to show: a stage's own name (``DenoisingStage``), else the metric's."""
    return name.removeprefix("stage[").removesuffix("]")


def noise_text(result: ScenarioResult, name: str) -> str:
    """A check's interval when the run judged it with its noise: `` [+1.0%, +9.0%] of 3 processes`` ('' if not),
    and ``, by point value`` when its limit lay within the noise (the point value decided)."""
    noisy = next((c for c in result.noise.checks if c.name == name), None) if result.noise is not None else None
    if noisy is None:
        return ""
    low, high = change(noisy.low, noisy.expected), change(noisy.high, noisy.expected)
    point = ", by point value" if noisy.judged_by == "point value" else ""
    return f" [{pct(low)}, {pct(high)}] of {noisy.processes} process(es){point}"


def e2e_of(result: ScenarioResult) -> tuple[float | None, float | None]:
    """The judged e2e and its expected value (None when unknown); for an A/B run, the base's median and the
    candidate's as the paired estimate puts it (base x ratio: the row's Δ is their change, not a second estimate)."""
    if result.ab is not None and (m := result.ab.metric("e2e")) is not None and m.candidate_ms is not None:
        return m.estimated_candidate_ms(), m.base_ms
    e2e = result.check("e2e")
    actual = e2e.actual if e2e is not None and e2e.actual is not None else result.measured.get("e2e_ms")
    return actual, (e2e.expected if e2e is not None else None)


def e2e_change(result: ScenarioResult) -> float | None:
    """e2e's change as its verdict estimated it: an A/B run's ratio (paired, per process pair: not the ratio of
    the two sides' pooled medians), else the judged e2e against its expected value."""
    if result.ab is not None:
        m = result.ab.metric("e2e")
        return m.ratio - 1 if m is not None and m.ratio is not None else None
    actual, expected = e2e_of(result)
    return change(actual, expected) if expected else None


def limiting_text(result: ScenarioResult) -> str:
    """The summary's limiting-check cell: an A/B run's deciding metric (a failing memory check when memory failed
    it), else the limiting check (with its interval when the run judged it with its noise)."""
    if result.ab is not None and not (result.verdict == "fail" and result.ab.verdict != "regressed"):
        return ab_text(result)
    check = limiting(result)
    return check_text(check) + noise_text(result, check.name) if check is not None else "-"


def summary_row(result: ScenarioResult) -> list[str]:
    actual, expected = e2e_of(result)
    return [
        result.scenario,
        result.outcome,
        num(actual),
        num(expected),
        pct(e2e_change(result)),
        limiting_text(result),
        reason(result),
    ]


def summary_table(results: Iterable[ScenarioResult], reason_width: int | None = None) -> list[list[str]]:
    """A header row, then one row per scenario (in the order given); each reason whole, or :func:`brief` at
    ``reason_width`` (a terminal's table, the whole reasons under it)."""
    rows = [summary_row(r) for r in results]
    if reason_width is not None:
        for row in rows:
            row[-1] = brief(row[-1], reason_width)
    return [list(SUMMARY_HEADER), *rows]


def ordered(results: Iterable[ScenarioResult], order: Sequence[str] = ()) -> list[ScenarioResult]:
    """Results in ``order`` (scenario ids; the rest after them, by name)."""
    rank = {sid: i for i, sid in enumerate(order)}
    return sorted(results, key=lambda r: (rank.get(r.scenario, len(rank)), r.scenario))
