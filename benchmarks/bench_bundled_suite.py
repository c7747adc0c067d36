"""Bundled suite: wall time, servers started, and the plugin's overhead per scenario and request.

Runs ``pytest --diffperf=PROFILE`` at the repo root (the reference server on this machine) and reads
the results file and JUnit XML it writes.

    python benchmarks/bench_bundled_suite.py [--profile pr_test] [--runs 1]

Overhead per request  = client-side request time - server-reported e2e (HTTP, media decode and
                        checks, perf-log lookup).
Overhead per scenario = test wall time (setup+call+teardown) - its server's load time when it
                        started one - client time of its requests (warmups included, estimated as
                        the median measured request).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(profile: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        results, junit = Path(tmp) / "results.json", Path(tmp) / "junit.xml"
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", f"--diffperf={profile}", f"--diffperf-json={results}",
             f"--junitxml={junit}", "-q", "-p", "no:cacheprovider"],
            cwd=REPO, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            sys.exit(f"suite failed:\n{proc.stdout[-3000:]}")
        doc = json.loads(results.read_text())
        times = {tc.get("name"): float(tc.get("time") or 0) for tc in ET.parse(junit).iter("testcase")}
    cases = json.loads((REPO / "data" / "cases.json").read_text())["cases"]
    warmups = {c["id"]: c.get("perf_warmup_requests", 0) for c in cases}
    started_by: dict[int, str] = {}
    per_scenario = []
    for scenario in doc["scenarios"]:
        rows = [r for r in doc["rows"] if r["case"] == scenario["case"]]
        pid = scenario["server"]["pid"]
        load_s = (
            scenario["server"]["load_ms"] / 1000
            if started_by.setdefault(pid, scenario["case"]) == scenario["case"]
            else 0.0
        )
        client_s = sum(r["client_ms"] for r in rows) / 1000
        client_s += warmups[scenario["case"]] * statistics.median(r["client_ms"] for r in rows) / 1000
        per_scenario.append({
            "case": scenario["case"],
            "test_s": times[scenario["case"]],
            "load_s": load_s,
            "overhead_s": times[scenario["case"]] - load_s - client_s,
            "request_overhead_ms": statistics.median(r["client_ms"] - r["e2e_ms"] for r in rows),
        })  # fmt: skip
    return {"wall_s": wall, "servers": len(doc["servers"]), "scenarios": per_scenario}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="pr_test")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for n in range(args.runs):
        result = run(args.profile)
        print(f"run {n + 1}: wall {result['wall_s']:.1f} s, {len(result['scenarios'])} scenarios, "
              f"{result['servers']} servers started")  # fmt: skip
        print(f"  {'scenario':24} {'test s':>7} {'load s':>7} {'overhead s':>10} {'req overhead ms':>15}")
        for s in result["scenarios"]:
            print(f"  {s['case']:24} {s['test_s']:7.2f} {s['load_s']:7.2f} {s['overhead_s']:10.2f} "
                  f"{s['request_overhead_ms']:15.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
