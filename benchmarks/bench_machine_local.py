"""A baseline recorded on this machine, then judged: how often no change fails and a 2x slowdown fails.

The two steps a newcomer takes (README): record once (a run with ``--diffperf-json``, then ``diffperf
accept`` of its results file), then judge. One tiny scenario (tiny/flux-t2i, 64x64, 4 steps, 1 warmup
and 3 measured requests, on the reference server) with the bundled file's tolerances (``pr_test`` of
``data/perf_baselines/cpu.json``: e2e +10 %) and static mode's defaults (the run's noise, re-measures
on fresh servers). After one recording, ``--trials`` rounds of: a run with no change, and a run with
the denoising stage delayed by the recorded e2e (``--inject-delay DenoisingStage=MS``: e2e about 2x).
Each run is a fresh ``pytest`` process in a temporary folder; the counts are of the scenario's outcome.

    nice python benchmarks/bench_machine_local.py --trials 10 [--json out.json] [--smoke]

``--smoke``: one trial (CI checks that the script still runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.support.suite import GENEROUS, tiny_case  # noqa: E402 (the tests' tiny case: the same scenario)


def case(serve_args: str = "") -> dict[str, Any]:
    return tiny_case("tiny", serve_args, perf_repeat_requests=3, perf_warmup_requests=1, timeout_s=300)


def pytest_run(folder: Path, serve_args: str = "") -> tuple[str, float]:
    """One run of the scenario: its outcome in the results file, and the run's wall time."""
    (folder / "cases.json").write_text(json.dumps({"cases": [case(serve_args)]}))
    results = folder / "results.json"
    results.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
        "--diffperf=pr_test", "--diffperf-baselines=baselines.json", "--diffperf-cases=cases.json",
        "--diffperf-server=reference", "--diffperf-hardware=cpu", f"--diffperf-json={results}",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False, env=env())
    wall = time.monotonic() - started
    (folder / "last-run.txt").write_text(done.stdout + done.stderr)
    if not results.is_file():
        return "no results", wall
    return json.loads(results.read_text())["scenarios"][0]["outcome"], wall


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def record(folder: Path) -> dict[str, Any]:
    """The two steps' first: measure against a placeholder, then accept the run's results as the baseline."""
    bundled = json.loads((REPO / "data" / "perf_baselines" / "cpu.json").read_text())
    doc = {"metadata": {"hardware": "cpu"}, "tolerances": bundled["tolerances"], "sampling": bundled["sampling"],
           "scenarios": {"tiny": GENEROUS}}  # fmt: skip
    (folder / "baselines.json").write_text(json.dumps(doc, indent=4))
    (folder / "pytest.ini").write_text("[pytest]\n")
    pytest_run(folder)
    accept = [sys.executable, "-m", "pytest_diffperf.cli", "accept", "results.json", "--baselines=baselines.json"]
    done = subprocess.run(accept, cwd=folder, capture_output=True, text=True, check=False, env=env())
    if done.returncode != 0:
        raise SystemExit(f"diffperf accept failed:\n{done.stdout}{done.stderr}")
    entry: dict[str, Any] = json.loads((folder / "baselines.json").read_text())["scenarios"]["tiny"]
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--json", help="write the counts and every run here")
    parser.add_argument("--smoke", action="store_true", help="one trial (CI checks that the script still runs)")
    args = parser.parse_args()
    if args.smoke:
        args.trials = 1
    with tempfile.TemporaryDirectory(prefix="diffperf-bench-local-") as tmp:
        folder = Path(tmp)
        started = time.monotonic()
        baseline = record(folder)
        delay = round(baseline["expected_e2e_ms"], 1)
        print(f"recorded: e2e {baseline['expected_e2e_ms']} ms, load {baseline.get('expected_load_ms')} ms; 2x: "
              f"DenoisingStage +{delay} ms", flush=True)  # fmt: skip
        runs: list[dict[str, Any]] = []
        for trial in range(args.trials):
            for kind, serve_args in (("no change", ""), ("2x", f"--inject-delay DenoisingStage={delay}")):
                outcome, wall = pytest_run(folder, serve_args)
                load = os.getloadavg()[0]
                runs.append({"trial": trial, "kind": kind, "outcome": outcome, "wall_s": round(wall, 1), "load1": load})
                print(f"trial {trial + 1}: {kind}: {outcome} ({wall:.0f} s, load {load:.1f})", flush=True)
        summary = {
            kind: {
                o: sum(1 for r in runs if r["kind"] == kind and r["outcome"] == o) for o in {r["outcome"] for r in runs}
            }
            for kind in ("no change", "2x")
        }
        print(json.dumps(summary), f"in {time.monotonic() - started:.0f} s")
        if args.json:
            Path(args.json).write_text(json.dumps({"baseline": baseline, "summary": summary, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
