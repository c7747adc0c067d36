"""Bundled suite: wall time, servers started, and the plugin's overhead per scenario and request.

Runs ``pytest --diffperf=PROFILE`` at the repo root (the reference server on this machine) and reads
the results file and JUnit XML it writes.

    python benchmarks/bench_bundled_suite.py [--profile pr_test] [--runs 1] [--smoke]

``--smoke`` runs only ``flux_kontext_tiny_edit`` (the cheapest), measured once (one server), outputs not compared:
CI's check that the script still runs.
A scenario failing its limits (a busy machine) is reported in the table, not an error.

Overhead per request  = client-side request time - server-reported e2e (HTTP, media decode and
                        checks, perf-log lookup).
Overhead per scenario = test wall time (setup+call+teardown) - its server's load time when it
                        started one - client time of its requests (warmups included, estimated as
                        the median measured request).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from pytest_diffperf.results.merge import scenarios_with_rows

REPO = Path(__file__).resolve().parent.parent


SMOKE = ["-k", "flux_kontext_tiny_edit", "--diffperf-remeasure=1"]  # the cheapest bundled scenario


def run(profile: str, select: list[str], env: dict[str, str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        results, junit = Path(tmp) / "results.json", Path(tmp) / "junit.xml"
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", f"--diffperf={profile}", f"--diffperf-json={results}",
             f"--junitxml={junit}", "-q", "-p", "no:cacheprovider", *select],
            cwd=REPO, capture_output=True, text=True, env={**os.environ, **env},
        )  # fmt: skip
        wall = time.perf_counter() - started
        if proc.returncode not in (0, 1) or not results.exists():  # 1: a scenario failed its limits (a busy machine)
            sys.exit(f"suite did not run:\n{proc.stdout[-3000:]}")
        doc = json.loads(results.read_text())
        times = {tc.get("name"): float(tc.get("time") or 0) for tc in ET.parse(junit).iter("testcase")}
    cases = json.loads((REPO / "data" / "cases.json").read_text())["cases"]
    warmups = {c["id"]: c.get("perf_warmup_requests", 0) for c in cases}
    started_by: dict[int, str] = {}
    per_scenario = []
    for scenario in scenarios_with_rows(doc):
        name, rows = scenario["scenario"], scenario["rows"]
        pid = scenario["server"]["pid"]
        load_s = scenario["server"]["load_ms"] / 1000 if started_by.setdefault(pid, name) == name else 0.0
        client_s = sum(r["client_ms"] for r in rows) / 1000
        client_s += warmups[name] * statistics.median(r["client_ms"] for r in rows) / 1000
        per_scenario.append({
            "scenario": name,
            "outcome": scenario["outcome"],
            "test_s": times[name],
            "load_s": load_s,
            "overhead_s": times[name] - load_s - client_s,
            "request_overhead_ms": statistics.median(r["client_ms"] - r["e2e_ms"] for r in rows),
        })  # fmt: skip
    return {"wall_s": wall, "servers": len(doc["servers"]), "scenarios": per_scenario}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="pr_test")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--smoke", action="store_true", help="one scenario, one run: does the script still run")
    args = parser.parse_args()
    for n in range(1 if args.smoke else args.runs):
        result = run(args.profile, *((SMOKE, {"DIFFPERF_SKIP_CONSISTENCY": "1"}) if args.smoke else ([], {})))
        print(f"run {n + 1}: wall {result['wall_s']:.1f} s, {len(result['scenarios'])} scenarios, "
              f"{result['servers']} servers started")  # fmt: skip
        print(
            f"  {'scenario':24} {'outcome':>7} {'test s':>7} {'load s':>7} {'overhead s':>10} {'req overhead ms':>15}"
        )
        for s in result["scenarios"]:
            print(f"  {s['scenario']:24} {s['outcome']:>7} {s['test_s']:7.2f} {s['load_s']:7.2f} {s['overhead_s']:10.2f} "
                  f"{s['request_overhead_ms']:15.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
