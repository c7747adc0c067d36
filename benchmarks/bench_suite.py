"""The test suite's wall time: the README's full command and its fast subset, with the slowest tests.

    python benchmarks/bench_suite.py [--which full,fast] [--smoke]

Each command runs as CI runs it (``PYTHONDONTWRITEBYTECODE=1``, offline model hubs) with
``--durations=10``, from the repository root. Printed: the machine's cores and CPU model, then per
command its wall time, its CPU seconds (the same tests take a fifth more or less by the VM's phase),
its 1-minute load average before and after (other jobs slow a shared machine: compare figures at
similar load only) and pytest's summary line, then the 10 slowest test phases.
``--smoke`` runs both commands on one small test file, without xdist (CI checks that the script still runs).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pytest_diffperf._util.device import cpu_name

REPO = Path(__file__).resolve().parents[1]
# The README's commands (README.md "Tests"; .ci/run runs FULL): keep the three in step.
FULL = ["tests", "-n", "2", "--dist", "loadfile"]
FAST = ["tests", "-m", "not server", "-n", "2", "--dist", "loadfile"]
COMMANDS = {"full": FULL, "fast": FAST}
SMOKE_TARGET = "tests/_util/test_names.py"
DURATION = re.compile(r"^(\d+\.\d+)s (setup|call|teardown)\s+(.+)$")


def _children_cpu_s() -> float:
    """User and system seconds of the finished child processes (and the descendants they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(args: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    load_before = os.getloadavg()[0]
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "--durations=10", "-q", "-rfE", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu_before
    lines = proc.stdout.splitlines()
    if proc.returncode not in (0, 1) or not lines:
        sys.exit(f"pytest {shlex.join(args)} did not run (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr}")
    slowest = [m.groups() for m in map(DURATION.match, lines) if m]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "summary": lines[-1].strip("= "),
        "code": proc.returncode,
        "load": (load_before, os.getloadavg()[0]),
        "slowest": slowest,
        "failed": [line for line in lines if line.startswith(("FAILED ", "ERROR "))],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--which", default="full,fast", help="comma-separated: full, fast")
    parser.add_argument(
        "--smoke", action="store_true", help="both commands on one small test file (CI checks the script runs)"
    )
    args = parser.parse_args()
    names = args.which.split(",")
    unknown = set(names) - set(COMMANDS)
    if unknown:
        parser.error(f"--which: unknown {', '.join(sorted(unknown))}; known: {', '.join(COMMANDS)}")
    results = {}
    for name in names:
        command = COMMANDS[name] if not args.smoke else [SMOKE_TARGET, *COMMANDS[name][1:], "-n", "0"]
        results[name] = (command, run(command))
    print(f"{os.cpu_count()} cores ({cpu_name()}); PYTHONDONTWRITEBYTECODE=1\n")
    print("| command | wall s | CPU s | load before, after | result |")
    print("|---|---|---|---|---|")
    for command, r in results.values():
        print(
            f"| `pytest {shlex.join(command)}` | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['load'][0]:.1f}, {r['load'][1]:.1f} | {r['summary']} |"
        )
    for name, (_, r) in results.items():
        for line in r["failed"]:
            print(f"\n{name}: {line}", end="")
        print(f"\n| slowest tests ({name}) | phase | s |\n|---|---|---|")
        for seconds, phase, test in r["slowest"]:
            print(f"| `{test}` | {phase} | {float(seconds):.1f} |")
    return int(max(r["code"] for _, r in results.values()))


if __name__ == "__main__":
    sys.exit(main())
