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

from .model import ABRecord, CheckRecord, NoiseRecord, ScenarioResult

PASS, FAIL, OTHER, EXPECTED = "#2e7d32", "#c62828", "#ef6c00", "#37474f"
VERDICT_COLORS = {"pass": PASS, "fail": FAIL, "missing": FAIL, "unguarded": OTHER, "inconclusive": OTHER}
AB_COLORS = {"unchanged": PASS, "improved": "#1565c0", "regressed": FAIL, "inconclusive": OTHER}
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
    colors = [VERDICT_COLORS.get(c.verdict, OTHER) for c in checks]
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
    """Each request's per-step times against the baseline's steps, the checked steps' limits marked."""
    measured = [_steps(row) for row in result.rows]
    measured = [steps for steps in measured if steps]
    checks = [c for c in result.checks if c.kind == "step"]
    if not measured and not checks:
        return None
    fig, ax = _figure(6)
    for i, steps in enumerate(measured):
        xs = sorted(steps)
        ax.plot(
            xs,
            [steps[x] for x in xs],
            color=PASS,
            alpha=0.35 + 0.5 / (i + 1),
            lw=1.2,
            marker=".",
            label="requests" if i == 0 else None,
        )
    if baseline_steps:
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
    ax.set_title("per-step times", fontsize=10, loc="left")
    return svg(fig)


def _steps(row: Mapping[str, Any]) -> dict[int, float]:
    full = row.get("steps_ms")
    if isinstance(full, list) and full:
        return dict(enumerate(float(v) for v in full))
    return {int(k): float(v) for k, v in (row.get("sampled_steps_ms") or {}).items()}


def _index(check: CheckRecord) -> int:
    return int(check.name.removeprefix("step[").removesuffix("]"))


Row = tuple[str, float, float | None, float | None, str]  # name, estimate, low, high, verdict


def interval_chart(
    rows: Sequence[Row],
    references: Sequence[tuple[float, str]],
    title: str,
    colors: Mapping[str, str],
) -> str | None:
    """A forest plot: per row (name, estimate, low, high, verdict) a point and its interval; vertical
    reference lines (value, label)."""
    rows = [r for r in rows if math.isfinite(r[1])]
    if not rows:
        return None
    fig, ax = _figure(len(rows))
    y = list(range(len(rows)))[::-1]
    for yi, (_name, estimate, low, high, verdict) in zip(y, rows, strict=True):
        color = colors.get(verdict, OTHER)
        if low is not None and high is not None:
            ax.plot([low, high], [yi, yi], color=color, lw=2.5, alpha=0.8)
        ax.plot([estimate], [yi], "o", color=color)
    for value, label in references:
        ax.axvline(
            value,
            color=EXPECTED if label == "no change" else FAIL,
            ls=":" if label != "no change" else "-",
            lw=1,
            label=label,
        )
    ax.set_yticks(y, [f"{r[0]} ({r[4]})" for r in rows])
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    ax.set_title(title, fontsize=10, loc="left")
    return svg(fig)


def ab_chart(ab: ABRecord) -> str | None:
    """An A/B run's ratios (candidate / base) with their intervals, against 1 and the tolerance."""
    rows: list[Row] = [(m.name, m.ratio, m.low, m.high, m.verdict) for m in ab.metrics if m.ratio is not None]
    tolerance = max((m.tolerance for m in ab.metrics if m.ratio is not None), default=0.0)
    refs = [(1.0, "no change")] + ([(1 + tolerance, f"+{tolerance:.0%} tolerance")] if tolerance else [])
    return interval_chart(rows, refs, "A/B: candidate / base, with intervals", AB_COLORS)


def noise_chart(noise: NoiseRecord) -> str | None:
    """A static run's timing checks as intervals on actual / expected, against each check's limit."""
    rows: list[Row] = []
    limits = []
    for c in noise.checks:
        if c.expected > 0:
            rows.append((c.name, c.actual / c.expected, c.low / c.expected, c.high / c.expected, c.verdict))
            limits.append(c.limit / c.expected)
    refs = [(1.0, "no change")] + ([(min(limits), f"tightest limit x{min(limits):.2f}")] if limits else [])
    return interval_chart(rows, refs, "timing checks: actual / expected, with intervals", VERDICT_COLORS)


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
