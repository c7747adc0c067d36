"""Interference as the bars check it: the bundled suite beside two CPU burners, and a 2x slowdown without them.

At the repo root (the reference server on this machine, ``data/cases.json``):

1. ``pytest --regen-baselines --diffperf-baselines=COPY``: the bundled baseline regenerated here, into a copy
   (the bundled file was recorded on another machine);
2. ``no change + 2 burners``: ``pytest --diffperf=pr_test --diffperf-baselines=COPY`` while two CPU-bound
   processes, started outside the run's process tree, run beside it;
3. ``2x slowdown``: the same without them, each case's candidate sleeping its baseline e2e in DenoisingStage;
4. optionally (``--control``) no change without burners.

Outputs are not compared (``DIFFPERF_SKIP_CONSISTENCY=1``): what is measured is how speed is judged.

Each phase reports its exit code, outcomes, and per scenario the verdict, the busiest window's outside CPU
share, the interference effect, and the load average; ``--json`` keeps it all.

    nice python benchmarks/bench_interference.py [--busy-share 25%] [--quiet-wait 120] [--json out.json] [--smoke]

``--smoke``: one scenario, one server a run, one burner and no quiet wait (CI checks that the script still runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SMOKE_SCENARIO = "flux_kontext_tiny_edit"  # the cheapest bundled scenario (e2e ~130 ms)
BURN = "import time\nend = time.monotonic() + 7200\nwhile time.monotonic() < end:\n    pass\n"


def pytest_at_root(*args: str) -> tuple[int, float]:
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    env = {**os.environ, "DIFFPERF_SKIP_CONSISTENCY": "1"}
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)
    tail = proc.stdout.strip().splitlines()[-3:] + (proc.stderr.strip().splitlines()[-3:] if proc.returncode else [])
    print("   ", "\n    ".join(tail), flush=True)
    return proc.returncode, time.monotonic() - started


def burners(count: int) -> list[subprocess.Popen[bytes]]:
    """CPU burners in their own session: not descendants of the pytest run (this script is its parent, not theirs)."""
    return [subprocess.Popen([sys.executable, "-c", BURN], start_new_session=True) for _ in range(count)]


def summary(path: Path) -> dict[str, Any]:
    if not path.exists():
        sys.exit(f"bench_interference: the run wrote no {path.name} (its output is above)")
    doc = json.loads(path.read_text())
    rows = {}
    for s in doc["scenarios"]:
        record = s.get("interference") or {}
        windows = record.get("windows", [])
        rows[s["scenario"]] = {
            "outcome": s["outcome"],
            "effect": record.get("effect"),
            "peak_cpu_share": max((w["cpu_share"] for w in windows), default=None),
            "min_cpu_share": min((w["cpu_share"] for w in windows), default=None),
            "load_avg": max((w["load_avg"][0] for w in windows), default=None),
            "servers": len(windows),
            "first_line": s["message"].splitlines()[0] if s["message"] else "",
        }
    counts: dict[str, int] = {}
    for row in rows.values():
        counts[row["outcome"]] = counts.get(row["outcome"], 0) + 1
    return {"counts": counts, "scenarios": rows, "interference": (doc.get("provenance") or {}).get("interference")}


def phase(name: str, args: list[str], out: Path, burn: int = 0) -> dict[str, Any]:
    print(f"== {name} (load average {os.getloadavg()[0]:.2f})", flush=True)
    procs = burners(burn)
    try:
        code, wall = pytest_at_root(*args, f"--diffperf-json={out}")
    finally:
        for p in procs:
            p.kill()
            p.wait()
    result = {"phase": name, "exit": code, "wall_s": round(wall, 1), **summary(out)}
    print(f"   exit {code}, {wall:.0f} s, {result['counts']}; {result['interference']}", flush=True)
    for sid, row in result["scenarios"].items():
        print(f"   {sid}: {row['outcome']} ({row['effect']}), outside CPU {row['min_cpu_share']}-"
              f"{row['peak_cpu_share']}, load {row['load_avg']}, {row['servers']} server(s)", flush=True)  # fmt: skip
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy-share", default="25%")
    parser.add_argument("--quiet-wait", default="120")
    parser.add_argument("--control", action="store_true", help="also no change without burners")
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="one scenario, one server a run, one burner, no quiet wait (CI checks that it runs)",
    )
    args = parser.parse_args()
    options = [
        f"--diffperf-busy-share={args.busy_share}",
        f"--diffperf-quiet-wait={0 if args.smoke else args.quiet_wait}",
    ]
    if args.smoke:
        options += ["-k", SMOKE_SCENARIO, "--diffperf-remeasure=1"]  # one server a run
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        baseline = folder / "cpu.json"
        shutil.copy(REPO / "data/perf_baselines/cpu.json", baseline)
        print("== regenerating the baseline here", flush=True)
        code, wall = pytest_at_root(
            "--regen-baselines", "--accept-busy", f"--diffperf-baselines={baseline}", *options[2:]
        )
        print(f"   exit {code}, {wall:.0f} s", flush=True)
        common = ["--diffperf=pr_test", f"--diffperf-baselines={baseline}", *options]
        burn = 1 if args.smoke else 2  # the smoke's one burner still makes the machine busy, for half the CPU
        phases = [phase(f"no change + {burn} burner(s)", common, folder / "busy.json", burn=burn)]
        cases = json.loads((REPO / "data/cases.json").read_text())
        expected = json.loads(baseline.read_text())["scenarios"]
        for case in cases["cases"]:
            delay = expected[case["id"]]["expected_e2e_ms"]
            case["frameworks"]["reference"]["serve_args"] += f" --inject-delay DenoisingStage={delay}"
        (folder / "slow.json").write_text(json.dumps(cases))
        slow = [*common, f"--diffperf-cases={folder / 'slow.json'}"]
        phases.append(phase("2x slowdown, no burners", slow, folder / "slow-results.json"))
        if args.control:
            phases.append(phase("no change, no burners", common, folder / "quiet.json"))
    if args.json:
        args.json.write_text(json.dumps({"options": options, "phases": phases}, indent=2) + "\n")


if __name__ == "__main__":
    main()
