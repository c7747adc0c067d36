"""SGLang's real server on this CPU beside the reference server: start time, request time, the plugin's overhead.

    VENV/bin/python benchmarks/bench_real_server.py [--rounds 3] [--smoke]

Run from the venv ``scripts/sglang_cpu/setup.sh`` built (``$DIFFPERF_MODELS`` set as it says). Each round runs
the bundled real-server case (``data/sglang_cpu/cases.json``: one warmup and three measured requests of a 256x256
Flux) once with ``--diffperf-server=sglang`` and once with ``--diffperf-server=reference`` (the same model folder,
the same flags), alternated, each a pytest process of its own without consistency checks. Per launcher, the
median over rounds of:

- ready: spawn until ``/health`` answers 200 (the plugin's ``ready after`` line); load: spawn until the load marker;
- e2e: the server's own ``total_duration_ms`` of a measured request (median of three);
- client: the plugin's wall time of a request (HTTP, the media fetched and checked) minus e2e;
- scenario: the scenario's wall time (warmup and measured requests, no server start) minus the server's own time
  of its four requests (the warmup's taken as the measured median): what the plugin adds per scenario.

Without ``$DIFFPERF_MODELS`` the model folder is exported into a temporary one first. ``--smoke`` runs one round
of the reference server alone (no SGLang needed: CI checks that the script still runs).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_diffperf._util.device import cpu_name
from pytest_diffperf.refserver.export import export

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "data/sglang_cpu/cases.json"
BASELINES = REPO / "data/sglang_cpu/perf_baselines/cpu.json"
LAUNCHERS = ("sglang", "reference")
MODEL = "tiny/flux-t2i"
READY = re.compile(r"ready after (\d+\.\d+) s")


def run_once(launcher: str, workdir: Path) -> dict[str, float]:
    """One pytest run of the bundled real-server case on ``launcher``; its figures."""
    results = workdir / "results.json"
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(workdir),
        "--diffperf=pr_test", f"--diffperf-server={launcher}", "--diffperf-hardware=cpu",
        f"--diffperf-cases={CASES}", f"--diffperf-baselines={BASELINES}", "--diffperf-remeasure=1",
        f"--diffperf-json={results}", f"--diffperf-log-dir={workdir / 'logs'}",
    ]  # fmt: skip
    env = {**os.environ, "DIFFPERF_SKIP_CONSISTENCY": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env, timeout=1800, check=False)
    ready = READY.search(done.stdout)
    if ready is None or not results.is_file():
        raise SystemExit(f"{launcher}: the run failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr}")
    doc = json.loads(results.read_text())
    (scenario,) = doc["scenarios"]
    rows = doc["rows"]
    e2e = statistics.median(r["e2e_ms"] for r in rows)
    requests = len(rows) + 1  # the warmup request besides the measured ones
    return {
        "ready_s": float(ready[1]),
        "load_s": doc["servers"][-1]["load_ms"] / 1000,
        "e2e_ms": e2e,
        "client_overhead_ms": statistics.median(r["client_ms"] - r["e2e_ms"] for r in rows),
        "scenario_overhead_ms": scenario["measurement"]["wall_s"] * 1000 - requests * e2e,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="runs per launcher, alternated (default 3)")
    parser.add_argument("--smoke", action="store_true", help="one round, the reference server alone")
    args = parser.parse_args()
    launchers = ("reference",) if args.smoke else LAUNCHERS
    print(f"machine: {os.cpu_count()} cores, {cpu_name()}, load average {os.getloadavg()[0]:.2f} at start")
    figures: dict[str, list[dict[str, float]]] = {launcher: [] for launcher in launchers}
    with tempfile.TemporaryDirectory(prefix="bench-real-server-") as tmp:
        if not os.environ.get("DIFFPERF_MODELS"):
            export(MODEL, Path(tmp))
            os.environ["DIFFPERF_MODELS"] = tmp
        for i in range(1 if args.smoke else args.rounds):
            for launcher in launchers:
                workdir = Path(tmp) / f"{launcher}-{i}"
                workdir.mkdir()
                figures[launcher].append(run_once(launcher, workdir))
                print(
                    f"round {i + 1} {launcher}: " + ", ".join(f"{k} {v:.1f}" for k, v in figures[launcher][-1].items())
                )
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    keys = list(figures[launchers[0]][0])
    print("launcher   " + "  ".join(f"{k:>20}" for k in keys) + "   (medians over rounds)")
    for launcher, runs in figures.items():
        print(f"{launcher:<10} " + "  ".join(f"{statistics.median(r[k] for r in runs):>20.1f}" for k in keys))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
