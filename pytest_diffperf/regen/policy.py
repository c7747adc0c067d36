"""Baseline regeneration: the one rule that decides each scenario's new entry.

``decide(policy, existing, measured)`` is pure: plain JSON dicts in (the file's entry, or None, and
the measured entry from ``perf.entry.entry_from_measurement``), a ``Decision`` out. Policies:

- ``replace``: the measured scenario replaces the existing one;
- ``improve``: replace only when e2e improved by at least ``min_improvement`` and no top-level
  metric (e2e, load, avg, median, DenoisingStage) got worse, nor did the run that measured it judge a
  regression (``regression``: ``diffperf accept`` of a run whose checks failed); otherwise keep it,
  saying why;
- ``tighten``: field-wise min(existing, measured); avg and median are recomputed from the
  resulting step map (and never raised), so no value ever goes up.

``request_cpu`` (the server's CPU time and wait for a CPU over the request the e2e came from) is no limit:
it goes with the e2e kept (the measured one's where the measured e2e is taken, else the existing one's)
and is not among the changes listed.

Every policy keeps what was not measured (notes, timing_tolerance, unknown keys, memory fields
and stages the measurement lacks) and never turns a guard on: a field or stage set to null stays
null. A scenario without an entry is added.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..protocol import DENOISING_STAGE

RegenPolicy = Literal["replace", "improve", "tighten"]
POLICIES: tuple[RegenPolicy, ...] = get_args(RegenPolicy)
Action = Literal["added", "replaced", "tightened", "kept"]
ACTIONS: tuple[Action, ...] = get_args(Action)
STEPS = "denoise_step_ms"
STAGES = "stages_ms"
E2E = "expected_e2e_ms"
REQUEST_CPU = "request_cpu"
TOP_LEVEL = (  # (path in the scenario, label): the metrics improve never lets get worse
    (("expected_e2e_ms",), "e2e"),
    (("expected_load_ms",), "load"),
    (("expected_avg_denoise_ms",), "avg denoise"),
    (("expected_median_denoise_ms",), "median denoise"),
    ((STAGES, DENOISING_STAGE), DENOISING_STAGE),
)


@dataclass(frozen=True)
class RegenSettings:
    policy: RegenPolicy
    min_improvement: float  # a fraction in [0, 1)
    dry_run: bool


@dataclass(frozen=True)
class Decision:
    action: Action
    entry: dict[str, Any]  # the scenario as it is to be in the file (the existing one when kept)
    reason: str
    previous: dict[str, Any] | None = None  # the entry the file had

    def changes(self) -> list[tuple[str, float | None, float]]:
        return changes(self.previous, self.entry)

    @property
    def writes(self) -> bool:
        return self.action != "kept"


def decide(
    policy: str,
    existing: Mapping[str, Any] | None,
    measured: Mapping[str, Any],
    min_improvement: float = 0.05,
    regression: str | None = None,
) -> Decision:
    """The new entry of one scenario, and why (``regression``: the measuring run's own failing checks, if any)."""
    if existing is None:
        return Decision("added", dict(measured), "no baseline yet")
    action: Action
    if policy == "tighten":
        action, entry, reason = _tighten(existing, measured)
    elif policy == "replace":
        action, entry, reason = "replaced", _merge(existing, measured), "policy replace"
    else:
        action, entry, reason = _improve(existing, _merge(existing, measured), min_improvement, regression)
    return Decision(action, entry, reason, dict(existing))


def _merge(existing: Mapping[str, Any], measured: Mapping[str, Any]) -> dict[str, Any]:
    """``existing`` with every measured field replaced (the step map whole, stages one by one)."""
    entry = dict(existing)
    for key, value in measured.items():
        old = existing.get(key, ...)
        if key == STAGES and isinstance(old, dict):
            entry[key] = {**old, **{s: v for s, v in value.items() if old.get(s, ...) is not None}}
        elif old is not None and key != REQUEST_CPU:
            entry[key] = value
    _with_request_cpu(entry, existing, measured)
    return entry


def _with_request_cpu(entry: dict[str, Any], existing: Mapping[str, Any], measured: Mapping[str, Any]) -> None:
    """Give ``entry`` the request CPU figures of the e2e it keeps (none where that request's were not read)."""
    source = measured if entry.get(E2E) == measured.get(E2E) else existing
    if REQUEST_CPU in source:
        entry[REQUEST_CPU] = source[REQUEST_CPU]
    else:
        entry.pop(REQUEST_CPU, None)


def _improve(
    existing: Mapping[str, Any], merged: dict[str, Any], min_improvement: float, regression: str | None
) -> tuple[Action, dict[str, Any], str]:
    old_e2e, new_e2e = _number(existing, "expected_e2e_ms"), _number(merged, "expected_e2e_ms")
    if not old_e2e or new_e2e is None:
        return "kept", dict(existing), "the baseline's e2e is 0 or missing: nothing to improve on"
    gain = 1 - new_e2e / old_e2e
    e2e_text = f"e2e {old_e2e:.2f} -> {new_e2e:.2f} ms ({-gain:+.1%})"
    if gain < min_improvement - 1e-9:  # a gain of exactly the threshold is enough
        return "kept", dict(existing), f"{e2e_text}, improve needs at least {-min_improvement:+.1%}"
    for path, label in TOP_LEVEL:
        old, new = _number(existing, *path), _number(merged, *path)
        if old is not None and new is not None and new > old:
            return "kept", dict(existing), f"{label} got worse: {old:.2f} -> {new:.2f} ({new / old - 1:+.1%})"
    if regression:
        return "kept", dict(existing), f"{e2e_text}, but the run judged a regression: {regression}"
    return "replaced", merged, f"{e2e_text}, no top-level metric worse"


def _tighten(existing: Mapping[str, Any], measured: Mapping[str, Any]) -> tuple[Action, dict[str, Any], str]:
    old_steps, new_steps = existing.get(STEPS), measured.get(STEPS, {})
    if isinstance(old_steps, dict) and set(old_steps) != set(new_steps):
        reason = (
            f"the step map changed ({len(old_steps)} -> {len(new_steps)} steps): tighten compares steps "
            "index by index; use --regen-policy replace"
        )
        return "kept", dict(existing), reason
    entry = dict(existing)
    for key, value in measured.items():
        old = existing.get(key, ...)
        if key == REQUEST_CPU:
            continue
        if isinstance(old, dict) and isinstance(value, dict):
            entry[key] = {**old, **{k: _lower(old.get(k, ...), v) for k, v in value.items()}}
        else:
            entry[key] = _lower(old, value)
    steps = [v for _, v in sorted(entry.get(STEPS, {}).items(), key=lambda kv: int(kv[0]))]
    if steps and all(isinstance(v, (int, float)) for v in steps):
        for key, computed in (
            ("expected_avg_denoise_ms", statistics.fmean(steps)),
            ("expected_median_denoise_ms", statistics.median(steps)),
        ):
            entry[key] = _lower(existing.get(key, ...), round(computed, 2))
    _with_request_cpu(entry, existing, measured)
    if entry == dict(existing):
        return "kept", entry, "no measured value is lower"
    return "tightened", entry, "field-wise minimum"


def _lower(old: Any, new: Any) -> Any:
    """min(old, new) for numbers; an absent field (``...``) takes ``new``; anything else stays."""
    if old is ...:
        return new
    if _is_number(old) and _is_number(new):
        return min(old, new)
    return old


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(entry: Mapping[str, Any], *path: str) -> float | None:
    """The numeric field at ``path`` (``"stages_ms", "DenoisingStage"``), or None."""
    value: Any = entry
    for part in path:
        value = value.get(part) if isinstance(value, Mapping) else None
    return float(value) if _is_number(value) else None


def changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[tuple[str, float | None, float]]:
    """(field, old value or None, new value) for every numeric field whose value differs (``request_cpu`` is no
    limit: not listed)."""
    out = []
    for key, value in new.items():
        if key == REQUEST_CPU:
            continue
        if isinstance(value, Mapping):
            for sub, sub_value in value.items():
                before = _number(old or {}, key, sub)
                if _is_number(sub_value) and before != sub_value:
                    out.append((f"{key}.{sub}", before, float(sub_value)))
        elif _is_number(value):
            before = _number(old or {}, key)
            if before != value:
                out.append((key, before, float(value)))
    return out
