"""`diffperf plan BASELINE`: the shards of a suite as a GitHub Actions matrix (JSON on stdout)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..cases import CaseFile, load_case_file
from ..errors import DiffperfError
from ..perf.baselines import load_baselines, select_scenarios
from ..serving.launchers import get_launcher, group_key
from ..sharding.plan import MAX_SHARDS, MAX_TIME_S, MIN_TIME_S, TARGET_TIME_S, assign, choose_count, server_groups

CHOICE_OPTIONS = ("target_time", "min_time", "max_time", "max_shards")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="split a suite into time-balanced shards for a CI matrix",
        description="Print the shards of a suite as a GitHub Actions matrix, "
        '{"include": [{"shard": K, "of": N, "scenarios": [...], "servers": S, "estimated_s": T}, ...]}, '
        "on one line of stdout, and a readable summary on stderr. Pass the files and hardware the "
        "shard jobs pass to pytest: each job computes the same shards itself (--diffperf-shard K/N).",
    )
    parser.add_argument("baselines", metavar="BASELINE", help="baseline file or perf_baselines/ folder")
    parser.add_argument("--cases", help="case file: scenarios sharing a server stay together (default: none)")
    parser.add_argument("--hardware", help="platform, as --diffperf-hardware")
    parser.add_argument("--server", default="sglang", help="launcher, as --diffperf-server (default: sglang)")
    parser.add_argument("--shards", type=int, help="number of shards N (default: chosen from the times below)")
    parser.add_argument("--target-time", type=float, help=f"preferred seconds per shard (default: {TARGET_TIME_S:g})")
    parser.add_argument("--min-time", type=float, help=f"fewest seconds per shard (default: {MIN_TIME_S:g})")
    parser.add_argument("--max-time", type=float, help=f"most seconds per shard (default: {MAX_TIME_S:g})")
    parser.add_argument("--max-shards", type=int, help=f"most shards (default: {MAX_SHARDS})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    limits = _limits(args)
    baselines = load_baselines(args.baselines, args.hardware)
    case_file = load_case_file(Path(args.cases), args.hardware) if args.cases else CaseFile(cases=[])
    cases = {case.id: case for case in case_file.cases}
    get_launcher(args.server)  # an unknown launcher fails here, as in pytest
    ids = select_scenarios(baselines, cases, args.hardware, [entry.id for entry in case_file.not_expressible])
    groups = server_groups(ids, baselines.scenarios, group_key(cases, args.server))
    total = sum(g.cost_s for g in groups)
    n = args.shards if args.shards is not None else choose_count(total, len(groups), **limits)
    shards = assign(groups, n)
    print(json.dumps({"include": [s.to_matrix_entry(ids) for s in shards]}, separators=(",", ":")))
    print(f"{len(ids)} scenarios, {len(groups)} server groups, estimated {total:.0f} s; {n} shard(s):", file=sys.stderr)
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
    for name, value in {"shards": args.shards, **given}.items():
        if value is not None and not value > 0:
            raise DiffperfError(f"expected a positive number, got {value:g}", source="--" + name.replace("_", "-"))
    return given
