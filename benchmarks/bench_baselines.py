"""Time loading SGLang's baseline file and building every check of every scenario.

    python benchmarks/bench_baselines.py [--path DIR_OR_FILE] [--hardware h100] [--repeats 30] [--smoke]

Prints the median (and min/max) wall time of one full load + plan; the target is < 0.2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from pytest_diffperf.perf.baselines import load_baselines
from pytest_diffperf.perf.limits import JudgeRules, get_preset, plan_checks
from pytest_diffperf.platforms import Platform, platform_value

DEFAULT = Path(__file__).resolve().parents[1] / "tests" / "vendor" / "sglang-data" / "v0.5.23" / "perf_baselines"


def load_and_plan(path: Path, hardware: Platform) -> tuple[int, int]:
    baselines = load_baselines(path, hardware, runner_name="")
    rules = JudgeRules(baselines.profile("pr_test", env={}), get_preset("sglang"), tuple(baselines.step_fractions))
    checks = 0
    for name, scenario in baselines.scenarios.items():
        checks += len(
            plan_checks(
                scenario,
                rules,
                is_video="t2v" in name or "i2v" in name,
                num_frames=None,
            )
        )
    return len(baselines.scenarios), checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", type=Path, default=DEFAULT)
    parser.add_argument("--hardware", default="h100", type=platform_value)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a few seconds' run at the smallest size (CI checks that the script still runs)",
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeats = 1
    if not args.path.exists():
        print(f"{args.path} not found (SGLang's data files are needed)", file=sys.stderr)
        return 2
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        scenarios, checks = load_and_plan(args.path, args.hardware)
        times.append(time.perf_counter() - start)
    print(f"{scenarios} scenarios, {checks} checks, {args.repeats} repeats")
    print(
        f"median {statistics.median(times) * 1000:.1f} ms  min {min(times) * 1000:.1f} ms  max {max(times) * 1000:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
