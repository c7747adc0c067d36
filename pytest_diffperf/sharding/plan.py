"""Time-balanced shards of a suite: server groups with estimated costs, LPT assignment, shard count.

A server group (the scenarios that share one server, or a scenario without a case on its own) is
never split. Estimates are SGLang's: a scenario costs its ``estimated_full_test_time_s``, else
``expected_e2e_ms / 1000 + 120`` s, else (no baseline) 300 s. Each estimate includes one server
start, so a group counts its start once (``Group.cost_s``). The assignment depends only on the
scenario list, its baselines and the group keys, so every CI job computes the same shards.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._util.values import BadValue
from ..errors import DiffperfError
from ..perf.schema import ScenarioBaseline

STARTUP_S = 120.0  # SGLang's server-start allowance when a scenario has no full-test estimate
DEFAULT_S = 300.0  # SGLang's estimate for a scenario without a baseline

# SGLang's planner defaults (scripts/ci/utils/diffusion/compute_diffusion_partitions.py).
MIN_TIME_S, TARGET_TIME_S, MAX_TIME_S, MAX_SHARDS = 1200.0, 1800.0, 2400.0, 10


@dataclass(frozen=True)
class Estimate:
    """A scenario's estimated seconds, and the part of them that is its server's start."""

    total_s: float
    start_s: float


def estimate(scenario: ScenarioBaseline | None) -> Estimate:
    """SGLang's estimate; the start share is the baseline's load time, 120 s, or 0 when unknown."""
    if scenario is None:
        return Estimate(DEFAULT_S, 0.0)
    if scenario.estimated_full_test_time_s is not None:
        total = scenario.estimated_full_test_time_s
        return Estimate(total, min(total, (scenario.expected_load_ms or 0.0) / 1000))
    return Estimate(scenario.expected_e2e_ms / 1000 + STARTUP_S, STARTUP_S)


@dataclass(frozen=True)
class Group:
    key: str
    scenarios: tuple[str, ...]
    estimates: tuple[Estimate, ...]

    @property
    def cost_s(self) -> float:
        """Every scenario's estimate without its start, plus one start (the largest)."""
        return sum(e.total_s - e.start_s for e in self.estimates) + max(e.start_s for e in self.estimates)


def server_groups(
    scenario_ids: Sequence[str], scenarios: Mapping[str, ScenarioBaseline], key: Callable[[str], str]
) -> list[Group]:
    """Groups in order of first appearance, scenarios in the given order."""
    members: dict[str, list[str]] = {}
    for sid in scenario_ids:
        members.setdefault(key(sid), []).append(sid)
    return [Group(k, tuple(ids), tuple(estimate(scenarios.get(s)) for s in ids)) for k, ids in members.items()]


@dataclass(frozen=True)
class Shard:
    number: int  # 1-based
    of: int
    groups: tuple[Group, ...]

    @property
    def estimated_s(self) -> float:
        return sum(g.cost_s for g in self.groups)

    @property
    def scenarios(self) -> list[str]:
        return [sid for g in self.groups for sid in g.scenarios]

    def to_matrix_entry(self, order: Sequence[str]) -> dict[str, object]:
        mine = set(self.scenarios)
        return {
            "shard": self.number,
            "of": self.of,
            "scenarios": [s for s in order if s in mine],
            "servers": len(self.groups),
            "estimated_s": round(self.estimated_s, 1),
        }


def assign(groups: Sequence[Group], n: int) -> list[Shard]:
    """Longest processing time first: each group, costliest first (ties by key), to the least loaded shard."""
    if not groups:
        raise DiffperfError("the suite has no scenarios to shard")
    if not 1 <= n <= len(groups):
        raise DiffperfError(f"cannot make {n} shards of {len(groups)} server group(s): use 1 to {len(groups)} shards")
    loads = [0.0] * n
    members: list[list[Group]] = [[] for _ in range(n)]
    for group in sorted(groups, key=lambda g: (-g.cost_s, g.key)):
        target = loads.index(min(loads))
        members[target].append(group)
        loads[target] += group.cost_s
    return [Shard(i + 1, n, tuple(m)) for i, m in enumerate(members)]


def plan_shards(
    scenario_ids: Sequence[str],
    scenarios: Mapping[str, ScenarioBaseline],
    key: Callable[[str], str],
    n: int | None = None,
    **limits: Any,
) -> list[Shard]:
    """The shards of a scenario set (``perf.scenarios``): ``n`` of them, else as many as ``choose_count`` picks
    with ``limits``. What ``diffperf plan`` prints and ``--diffperf-shard K/N`` keeps."""
    groups = server_groups(scenario_ids, scenarios, key)
    if n is None:
        n = choose_count(sum(g.cost_s for g in groups), len(groups), **limits)
    return assign(groups, n)


def choose_count(
    total_s: float,
    groups: int,
    *,
    target_time: float = TARGET_TIME_S,
    min_time: float = MIN_TIME_S,
    max_time: float = MAX_TIME_S,
    max_shards: int = MAX_SHARDS,
) -> int:
    """SGLang's rule: ceil(total/target), clamped into [ceil(total/max), floor(total/min)] and to
    ``max_shards`` (when that range is empty, ceil(total/target) up to ``max_shards``); then at most
    one shard per server group."""
    if total_s <= 0:
        return 1
    low = min(max(1, math.ceil(total_s / max_time)), max_shards)
    high = min(max(1, math.floor(total_s / min_time)), max_shards)
    preferred = max(1, min(math.ceil(total_s / target_time), max_shards))
    n = preferred if high < low else max(low, min(preferred, high))
    return max(1, min(n, groups))


def shard_spec(text: str) -> tuple[int, int]:
    """``--diffperf-shard K/N``: shard K of N, 1 <= K <= N."""
    k, sep, n = text.partition("/")
    if not (sep and (k + n).isascii() and k.strip().isdigit() and n.strip().isdigit()):
        raise BadValue(f"expected K/N with whole numbers (shard K of N, 1-based, e.g. 2/4), got {text!r}")
    return _one_of(int(k), int(n), text)


def _one_of(k: int, n: int, text: str) -> tuple[int, int]:
    if not 1 <= k <= n:
        raise BadValue(f"shard K/N needs 1 <= K <= N (K is 1-based), got {text!r}")
    return k, n


def which_shard(shard: tuple[int, int] | None, shard_id: int | None, num_shards: int | None) -> tuple[int, int] | None:
    """``--diffperf-shard K/N``, or ``--diffperf-shard-id K`` with ``--diffperf-num-shards N`` (None: no shard)."""
    if shard is not None and (shard_id is not None or num_shards is not None):
        raise DiffperfError(
            "give either --diffperf-shard K/N or --diffperf-shard-id with --diffperf-num-shards, not both",
            source="--diffperf-shard",
        )
    if shard is not None or (shard_id is None and num_shards is None):
        return shard
    if shard_id is None or num_shards is None:
        missing = "--diffperf-shard-id" if shard_id is None else "--diffperf-num-shards"
        raise DiffperfError(
            f"also needs {missing}", source="--diffperf-shard-id" if shard_id is not None else "--diffperf-num-shards"
        )
    try:
        return _one_of(shard_id, num_shards, f"{shard_id}/{num_shards}")
    except BadValue as exc:
        raise DiffperfError(str(exc), source="--diffperf-shard-id/--diffperf-num-shards") from None
