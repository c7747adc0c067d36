"""`diffperf plan BASELINE`: the shards of a suite as a GitHub Actions matrix (JSON on stdout)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .._util.values import argtype, count, seconds
from ..errors import DiffperfError
from ..perf.scenarios import CLI_FLAGS, load_scenario_set
from ..serving.launchers import get_launcher, group_key
from ..sharding.plan import MAX_SHARDS, MAX_TIME_S, MIN_TIME_S, TARGET_TIME_S, plan_shards

CHOICE_OPTIONS = ("target_time", "min_time", "max_time", "max_shards")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="split a suite into time-balanced shards for a CI matrix",
        description="Print the shards of a suite as a GitHub Actions matrix, "
        '{"include": [{"shard": K, "of": N, "scenarios": [...], "servers": S, "estimated_s": T}, ...]}, '
        "on one line of stdout, and a readable summary on stderr. Pass the files and hardware the "
        "shard jobs pass to pytest: each job computes the same shards itself (--diffperf-shard K/N).",
    )
    parser.add_argument("baselines", metavar="BASELINE", help="baseline file or perf_baselines/ folder")
    parser.add_argument(
        "--cases",
        help="case file or SGLang's case lists, as --diffperf-cases: scenarios sharing a server stay together",
    )
    parser.add_argument("--suites", help="SGLang's suites to read from the case lists, as --diffperf-suites")
    parser.add_argument("--hardware", help="platform, as --diffperf-hardware")
    parser.add_argument("--server", default="sglang", help="launcher, as --diffperf-server (default: sglang)")
    parser.add_argument(
        "--shards", type=argtype(count), help="number of shards N (default: chosen from the times below)"
    )
    parser.add_argument(
        "--target-time", type=argtype(seconds), help=f"preferred seconds per shard (default: {TARGET_TIME_S:g})"
    )
    parser.add_argument("--min-time", type=argtype(seconds), help=f"fewest seconds per shard (default: {MIN_TIME_S:g})")
    parser.add_argument("--max-time", type=argtype(seconds), help=f"most seconds per shard (default: {MAX_TIME_S:g})")
    parser.add_argument("--max-shards", type=argtype(count), help=f"most shards (default: {MAX_SHARDS})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    limits = _limits(args)
    suite = load_scenario_set(args.baselines, args.hardware, args.cases, args.suites, CLI_FLAGS)
    get_launcher(args.server)  # an unknown launcher fails here, as in pytest
    ids = suite.ids
    shards = plan_shards(ids, suite.baselines.scenarios, group_key(suite.cases, args.server), args.shards, **limits)
    n, groups = len(shards), sum(len(s.groups) for s in shards)
    total = sum(s.estimated_s for s in shards)
    print(json.dumps({"include": [s.to_matrix_entry(ids) for s in shards]}, separators=(",", ":")))
    print(f"{len(ids)} scenarios, {groups} server groups, estimated {total:.0f} s; {n} shard(s):", file=sys.stderr)
    for s in shards:
        print(f"  shard {s.number}/{n}: {len(s.scenarios)} scenarios, {len(s.groups)} server starts, "
              f"estimated {s.estimated_s:.0f} s", file=sys.stderr)  # fmt: skip
    return 0


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    given = {name: getattr(args, name) for name in CHOICE_OPTIONS if getattr(args, name) is not None}
    if args.shards is not None and given:
        flags = ", ".join("--" + name.replace("_", "-") for name in given)
        raise DiffperfError(
            f"give either --shards or {flags} (which choose the number of shards), not both", source="--shards"
        )
    return given
