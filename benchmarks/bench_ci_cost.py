"""What SGLang's diffusion CI costs per run, in server-hours and GPU-hours: static shards, and A/B shards scaled.

Nothing is timed here (the machine is shared, and has no GPU): the static figures are ``diffperf plan``'s
estimates on SGLang's own tree (each scenario's ``estimated_full_test_time_s``, server groups sharing one
start; GPU-hours weigh each group by its cases' ``num_gpus``), the A/B ones those times the ratio A/B
took to static mode on the bundled suite (docs/benchmarks.md, "A/B cost": a regression stops after 2
process pairs, 1.65-2.07x; no change runs until decided, 5.24-6.49x). A/B's base and candidate servers
share the scenario's devices (``--diffperf-ab-servers together``, or one after the other), so its
GPU-hours scale as its time does.

    python benchmarks/bench_ci_cost.py [--tree PATH] [--hardware h100] [--smoke]

Without ``--tree``: SGLang 0.5.23's ``test/server`` folder as its wheel has it, laid out from the vendored files.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pytest_diffperf.perf.scenarios import CLI_FLAGS, load_scenario_set
from pytest_diffperf.platforms import Platform, platform_value
from pytest_diffperf.serving.launchers import group_key
from pytest_diffperf.sharding.plan import plan_shards
from tests.support import sglang_tree

# A/B wall time over static mode's on the bundled suite, docs/benchmarks.md "A/B cost" (2026-12-02/03)
REGRESSED = (1.65, 2.07)
UNCHANGED = (5.24, 6.49)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="SGLang's test/server folder (default: 0.5.23's, vendored)")
    parser.add_argument("--hardware", default="h100", type=platform_value)
    parser.add_argument("--smoke", action="store_true", help="the same (it measures nothing: seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = args.tree or sglang_tree.build(Path(tmp))
        report(tree, args.hardware)


def report(tree: Path, hardware: Platform) -> None:
    suite = load_scenario_set(tree / "perf_baselines", hardware, tree / "gpu_cases.py", None, CLI_FLAGS)
    key = group_key(suite.cases, "sglang")
    shards = plan_shards(suite.ids, suite.baselines.scenarios, key)
    server_s = sum(s.estimated_s for s in shards)
    gpu_s = sum(
        group.cost_s * max((suite.cases[sid].num_gpus for sid in group.scenarios if sid in suite.cases), default=1)
        for shard in shards
        for group in shard.groups
    )
    print(f"SGLang's test/server on {hardware}: {len(suite.ids)} scenarios, {len(shards)} shards (diffperf plan)")
    print(f"static: {server_s / 3600:.2f} server-hours, {gpu_s / 3600:.2f} GPU-hours")
    for what, (low, high) in (("A/B, a regression", REGRESSED), ("A/B, no change", UNCHANGED)):
        print(f"{what}: {gpu_s * low / 3600:.1f}-{gpu_s * high / 3600:.1f} GPU-hours ({low}-{high}x static)")


if __name__ == "__main__":
    main()
