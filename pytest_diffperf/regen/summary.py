"""The regeneration summary as text lines.

Per scenario: added / replaced / tightened / kept (reason); per field, how many values went
down and up; the largest relative changes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._util.text import format_table
from ..protocol import DENOISING_STAGE
from .guard import LARGE_CHANGE
from .policy import ACTIONS, Decision, RegenSettings

LARGEST = 5
MIN_ABS_CHANGE = 1.0  # ms or MiB: smaller changes (0.02 -> 0.03 ms) are not listed among the largest


def summary_lines(records: list[dict[str, Any]], settings: RegenSettings) -> list[str]:
    """The summary as text lines."""
    if not records:
        return ["no scenario was regenerated"]
    counts = Counter(r["action"] for r in records)
    written = sorted({r["file"] for r in records if r["written"]})
    mode = "dry run, nothing written" if settings.dry_run else f"written: {', '.join(written) or 'nothing'}"
    lines = [
        f"policy {settings.policy}: " + ", ".join(f"{counts[a]} {a}" for a in ACTIONS if counts[a]) + f" ({mode})",
        "",
    ]
    lines += format_table(
        [("scenario", "action", "reason")] + [(r["scenario"], r["action"], r["reason"]) for r in records],
        right_from=None,
    )
    changed = [(r["scenario"], key, old, new) for r in records for key, old, new in r["changes"] if old is not None]
    if changed:
        lines += ["", *format_table(_field_counts(changed), right_from=1)]
        largest = _largest(changed)
        if len(largest) > 1:
            lines += ["", "largest relative changes:", *format_table(largest, right_from=2)]
    return lines


def _field_counts(changed: list[tuple[str, str, float, float]]) -> list[tuple[str, ...]]:
    lowered: Counter[str] = Counter()
    raised: Counter[str] = Counter()
    for _, key, old, new in changed:
        group = key.split(".", 1)[0] + ".*" if key.startswith("denoise_step_ms.") else key
        (lowered if new < old else raised)[group] += 1
    fields = sorted(set(lowered) | set(raised))
    rows: list[tuple[str, ...]] = [("field", "lowered", "raised")]
    return rows + [(f, str(lowered[f]), str(raised[f])) for f in fields]


def _largest(changed: list[tuple[str, str, float, float]]) -> list[tuple[str, ...]]:
    relative = [
        (new / old - 1, sid, key, old, new)
        for sid, key, old, new in changed
        if old and abs(new - old) >= MIN_ABS_CHANGE
    ]
    relative.sort(key=lambda x: -abs(x[0]))
    rows: list[tuple[str, ...]] = [("scenario", "field", "old", "new", "change")]
    return rows + [
        (sid, key, f"{old:.2f}", f"{new:.2f}", f"{rel:+.1%}") for rel, sid, key, old, new in relative[:LARGEST]
    ]


HEADLINE_FIELDS = (
    "expected_e2e_ms",
    "expected_load_ms",
    "expected_avg_denoise_ms",
    "expected_median_denoise_ms",
    f"stages_ms.{DENOISING_STAGE}",
)


def decision_lines(
    scenario: str, file: str, decision: Decision, dry_run: bool, large: float = LARGE_CHANGE
) -> list[str]:
    """One scenario's decision as it is made, before it is written: the action, how many values go down and up,
    the main fields' old and new values, and a warning for a main figure that moves by more than ``large``."""
    verb = "would be" if dry_run else "is"
    head = f"diffperf: regen {scenario} -> {file}: {decision.action} ({decision.reason})"
    if not decision.writes:
        return [head + f"; the file {verb} left as it is"]
    changed = [(key, old, new) for key, old, new in decision.changes()]
    lowered = sum(1 for _, old, new in changed if old is not None and new < old)
    raised = sum(1 for _, old, new in changed if old is not None and new > old)
    added = sum(1 for _, old, _ in changed if old is None)
    lines = [head + f"; {lowered} value(s) lowered, {raised} raised, {added} new"]
    main = [(key, old, new) for key, old, new in changed if key in HEADLINE_FIELDS]
    if main:
        lines.append("  " + "; ".join(f"{key} {_value(old)} -> {new:.2f}{_rel(old, new)}" for key, old, new in main))
    for key, old, new in main:
        if old and abs(new / old - 1) > large:
            lines.append(
                f"  warning: {key} moves by {new / old - 1:+.1%} (more than {large:.0%}): is this the right hardware?"
            )
    return lines


def _value(old: float | None) -> str:
    return "-" if old is None else f"{old:.2f}"


def _rel(old: float | None, new: float) -> str:
    return f" ({new / old - 1:+.1%})" if old else ""
