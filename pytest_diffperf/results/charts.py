"""The HTML report's charts, drawn by matplotlib and kept as inline SVG (text stays text, no fonts embedded).

Each chart gets its own id salt, so the element ids of several SVGs in one page never clash.
Needs the ``report`` extra (matplotlib); :mod:`.html` imports this module only when it renders.
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # no display: render to files

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from .model import ABRecord, CheckRecord, NoiseRecord, ScenarioResult
from .rows import RequestRow
from .tables import label

PASS, FAIL, OTHER, EXPECTED = "#2e7d32", "#c62828", "#ef6c00", "#37474f"
VERDICT_COLORS = {"pass": PASS, "fail": FAIL, "missing": FAIL, "unguarded": OTHER, "inconclusive": OTHER}
AB_COLORS = {"unchanged": PASS, "improved": "#1565c0", "regressed": FAIL, "inconclusive": OTHER}
SIDE_COLORS = {"base": "#1565c0", "candidate": "#ef6c00", "requests": PASS}
RATIO_TICKS = (0.1, 0.25, 0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)
WIDTH_IN = 7.5
_salt = itertools.count()


def svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element (no XML prolog), closed."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"diffperf-{next(_salt)}"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return re.sub(r"^.*?(<svg\b)", r"\1", text, count=1, flags=re.S)


def _figure(rows: int) -> tuple[Figure, Any]:
    fig, ax = plt.subplots(figsize=(WIDTH_IN, max(1.6, 0.38 * rows + 0.9)))
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def stage_chart(result: ScenarioResult) -> str | None:
    """Each stage's time (bar) against its expected time (black tick) and limit (red dashed tick); e2e on top."""
    checks = [c for c in result.checks if c.kind in ("stage", "e2e") and c.actual is not None]
    if not checks:
        return None
    checks.sort(key=lambda c: (c.kind != "e2e", -c.expected))
    names = [c.name.removeprefix("stage[").removesuffix("]") for c in checks]
    fig, ax = _figure(len(checks))
    y = list(range(len(checks)))[::-1]
    colors = [VERDICT_COLORS.get(result.check_verdict(c), OTHER) for c in checks]
    ax.barh(y, [c.actual or 0.0 for c in checks], color=colors, alpha=0.8, height=0.6, label="measured")
    ax.scatter([c.expected for c in checks], y, marker="|", s=500, color=EXPECTED, linewidths=2, label="expected")
    ax.scatter([c.limit for c in checks], y, marker="|", s=500, color=FAIL, linewidths=1.5, label="limit")
    ax.set_yticks(y, names)
    values = [v for c in checks for v in (c.actual or 0.0, c.expected, c.limit) if v > 0]
    if values and max(values) / min(values) > 50:
        ax.set_xscale("log")
    ax.set_xlabel("ms")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title("stages against their limits", fontsize=10, loc="left")
    return svg(fig)


def steps_chart(result: ScenarioResult, baseline_steps: Mapping[int, float] | None = None) -> str | None:
    """Each request's per-step times against the baseline's steps, the checked steps' limits marked; an A/B run's
    base and candidate requests in their own colours (the stored baseline, which it does not judge by, left out)."""
    rows = [(row.side, _steps(row)) for row in result.rows]
    rows = [(side, steps) for side, steps in rows if steps]
    checks = [c for c in result.checks if c.kind == "step"]
    if not rows and not checks:
        return None
    fig, ax = _figure(6)
    labelled: set[str] = set()
    for i, (side, steps) in enumerate(rows):
        name = str(side) if side else "requests"
        xs = sorted(steps)
        ax.plot(
            xs,
            [steps[x] for x in xs],
            color=SIDE_COLORS.get(name, PASS),
            alpha=0.6 if side else 0.35 + 0.5 / (i + 1),
            lw=1.2,
            marker=".",
            label=None if name in labelled else name,
        )
        labelled.add(name)
    if result.ab is None and baseline_steps:
        xs = sorted(baseline_steps)
        ax.plot(xs, [baseline_steps[x] for x in xs], color=EXPECTED, lw=1.5, ls="--", label="baseline")
    elif checks:
        ax.plot([_index(c) for c in checks], [c.expected for c in checks], "o", color=EXPECTED, label="baseline")
    if checks:
        ax.scatter([_index(c) for c in checks], [c.limit for c in checks], marker="v", color=FAIL, label="limit")
    ax.set_xlabel("denoising step")
    ax.set_ylabel("ms")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, frameon=False)
    ax.set_title("per-step times" + (": base and candidate requests" if result.ab is not None else ""), fontsize=10,
                 loc="left")  # fmt: skip
    return svg(fig)


def _steps(row: RequestRow) -> dict[int, float]:
    if row.steps_ms:
        return dict(enumerate(row.steps_ms))
    return {int(k): v for k, v in row.sampled_steps_ms.items()}


def _index(check: CheckRecord) -> int:
    return int(check.name.removeprefix("step[").removesuffix("]"))


Row = tuple[str, float, float | None, float | None, str]  # name, estimate, low, high, verdict
Band = tuple[float | None, float]  # per row: the lower and upper edge of its own tolerance (None: one-sided)


def interval_chart(
    rows: Sequence[Row],
    bands: Sequence[Band],
    band_label: str,
    title: str,
    colors: Mapping[str, str],
) -> str | None:
    """A forest plot of ratios on a log axis: per row (name, estimate, low, high, verdict) a point and its
    interval, with that row's own band (red ticks) and a line at no change. The axis spans the estimates and
    the bands, so one wide interval does not squeeze the rest: it is cut at the edge, with an arrow."""
    kept = [(r, b) for r, b in zip(rows, bands, strict=True) if math.isfinite(r[1]) and r[1] > 0]
    if not kept:
        return None
    fig, ax = _figure(len(kept))
    y = list(range(len(kept)))[::-1]
    # the axis spans the estimates and the bands: an interval reaching further is cut at the edge, marked by an arrow
    span = [1.0] + [v for r, b in kept for v in (r[1], *b) if v is not None and v > 0]
    lo, hi = min(span) / 1.3, max(span) * 1.3
    for yi, ((_name, estimate, low, high, verdict), (lower, upper)) in zip(y, kept, strict=True):
        color = colors.get(verdict, OTHER)
        if low is not None and high is not None and low > 0:
            ax.plot([max(low, lo), min(high, hi)], [yi, yi], color=color, lw=2.5, alpha=0.8)
            for end, edge, marker in ((low, lo, "<"), (high, hi, ">")):
                if (end < edge) if marker == "<" else (end > edge):
                    ax.plot([edge], [yi], marker=marker, color=color, ms=6, clip_on=False)
        ax.plot([estimate], [yi], "o", color=color)
        edges = [e for e in (lower, upper) if e is not None and e > 0]
        ax.scatter(edges, [yi] * len(edges), marker="|", s=260, color=FAIL, linewidths=1.5,
                   label=band_label if yi == y[0] else None)  # fmt: skip
    ax.axvline(1.0, color=EXPECTED, lw=1, label="no change")
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = _spaced([t for t in RATIO_TICKS if lo <= t <= hi], math.log(hi / lo) / 8)
    ax.set_xticks(ticks, [f"{t - 1:+.0%}" if t != 1 else "0" for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("change (log scale)")
    ax.set_yticks(y, [f"{r[0]} ({r[4]})" for r, _ in kept])
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside: never over a row
    ax.set_title(title, fontsize=10, loc="left")
    return svg(fig)


def _spaced(ticks: Sequence[float], gap: float) -> list[float]:
    """Ticks at least ``gap`` apart on the log axis, 1 (no change) always among them."""
    kept: list[float] = [1.0] if 1.0 in ticks else []
    for t in sorted(ticks, key=lambda t: abs(math.log(t))):
        if all(abs(math.log(t / k)) >= gap for k in kept):
            kept.append(t)
    return sorted(kept)


def ab_chart(ab: ABRecord) -> str | None:
    """An A/B run's ratios (candidate / base) with their intervals, each against its own tolerance: e2e first, then
    the gated metrics."""
    shown = sorted((m for m in ab.metrics if m.ratio is not None), key=lambda m: (m.name != "e2e", not m.gated))
    rows: list[Row] = [(label(m.name), m.ratio or 0.0, m.low, m.high, m.verdict) for m in shown]
    bands: list[Band] = [(1 / (1 + m.tolerance), 1 + m.tolerance) for m in shown]
    return interval_chart(rows, bands, "each metric's tolerance", "A/B: candidate / base, with intervals", AB_COLORS)


def ab_stages_chart(ab: ABRecord) -> str | None:
    """An A/B run's e2e and stages in milliseconds, the base's median beside the candidate's (DenoisingStage 125 ->
    426 ms as two bars), each stage's ratio and verdict at its end."""
    shown = [m for m in ab.metrics if m.name == "e2e" or m.name.startswith("stage[")]
    shown = [m for m in shown if m.base_ms is not None and m.candidate_ms is not None]
    if not shown:
        return None
    shown.sort(key=lambda m: (m.name != "e2e", -(m.base_ms or 0.0)))
    fig, ax = _figure(round(len(shown) * 1.6))
    y = [2.0 * i for i in range(len(shown))][::-1]
    base = [m.base_ms or 0.0 for m in shown]
    candidate = [m.candidate_ms or 0.0 for m in shown]
    ax.barh([v + 0.4 for v in y], base, height=0.75, color=SIDE_COLORS["base"], label="base (median)")
    ax.barh([v - 0.4 for v in y], candidate, height=0.75, color=SIDE_COLORS["candidate"], label="candidate (median)")
    for v, m, width in zip(y, shown, [max(b, c) for b, c in zip(base, candidate, strict=True)], strict=True):
        note = f" {m.ratio - 1:+.1%} {m.verdict}" if m.ratio is not None else ""
        ax.annotate(f"{m.base_ms:.0f} -> {m.candidate_ms:.0f} ms{note}", (width, v), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8, color=AB_COLORS.get(m.verdict, EXPECTED))  # fmt: skip
    ax.set_yticks(y, [label(m.name) for m in shown])  # a linear axis: bars from 0 compare by length
    ax.margins(x=0.35)
    ax.set_xlabel("ms")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title("A/B: each stage, base against candidate", fontsize=10, loc="left")
    return svg(fig)


def noise_chart(noise: NoiseRecord) -> str | None:
    """A static run's timing checks as intervals on actual / expected, each against its own limit."""
    shown = [c for c in noise.checks if c.expected > 0]
    rows: list[Row] = [
        (c.name, c.actual / c.expected, c.low / c.expected, c.high / c.expected, c.verdict) for c in shown
    ]
    bands: list[Band] = [(None, c.limit / c.expected) for c in shown]
    return interval_chart(rows, bands, "each check's limit", "timing checks: actual / expected, with intervals",
                          VERDICT_COLORS)  # fmt: skip


def trend_chart(
    labels: Sequence[str], values: Sequence[float | None], steps: Sequence[tuple[int, float, float]]
) -> str | None:
    """A metric over the runs; each change point (index, median before, median after) marked with the levels."""
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(present) < 2:
        return None
    fig, ax = _figure(6)
    ax.plot([i for i, _ in present], [v for _, v in present], marker="o", color=EXPECTED, lw=1.2)
    for index, before, after in steps:
        ax.axvline(index - 0.5, color=FAIL, ls="--", lw=1)
        ax.annotate(
            f"{after / before - 1:+.1%}",
            (index - 0.5, after),
            color=FAIL,
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    ticks = list(range(len(labels)))
    every = max(1, len(ticks) // 8)
    ax.set_xticks(ticks[::every], [labels[i] for i in ticks[::every]], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("e2e ms")
    ax.set_title("over the runs", fontsize=10, loc="left")
    return svg(fig)
