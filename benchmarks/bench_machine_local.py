"""A baseline recorded on this machine, then judged: how often no change fails and a 2x slowdown fails.

The two steps a newcomer takes (README): record once (a run with ``--diffperf-json``, then ``diffperf
accept`` of its results file), then judge. One scenario of tiny/flux-t2i on the reference server, 1
warmup and 3 measured requests, the shape of the bundled ``flux_tiny_t2i_8steps`` (256x256, 8 steps:
e2e about 250 ms, so SGLang's 20 ms pad does not set its limit) or with ``--shape tests`` the tests'
tiny case (64x64, 4 steps: e2e 30-50 ms, where the pad makes the limit +40-70 %, and 2x lies within
the noise of it); the bundled file's tolerances (``pr_test`` of ``data/perf_baselines/cpu.json``: e2e
+10 %) and static mode's defaults (the run's noise, re-measures on fresh servers). After one recording, ``--trials`` rounds of: a run with no change, and a run with
the denoising stage delayed by the recorded e2e (``--inject-delay DenoisingStage=MS``: e2e about 2x).
Each run is a fresh ``pytest`` process in a temporary folder; the counts are of the scenario's outcome.

    nice python benchmarks/bench_machine_local.py --trials 10 [--shape bundled|tests] [--json out.json] [--keep DIR] [--smoke]

``--smoke``: one trial of the tests' shape, each run on one server, busy or not (CI checks that the script still
runs).
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
from tests.support.suite import GENEROUS, tiny_case  # noqa: E402 (the tests' tiny case)

SHAPES = {"bundled": {"width": 256, "height": 256, "num_inference_steps": 8}, "tests": {}}


def case(serve_args: str = "", shape: str = "bundled") -> dict[str, Any]:
    return tiny_case("tiny", serve_args, perf_repeat_requests=3, perf_warmup_requests=1, timeout_s=300, **SHAPES[shape])


def pytest_run(
    folder: Path, serve_args: str = "", keep: Path | None = None, shape: str = "bundled", extra: tuple[str, ...] = ()
) -> tuple[dict[str, Any], float]:
    """One run of the scenario: its outcome and why (from the results file), and the run's wall time; ``keep``:
    a folder to copy its results file and output into, numbered; ``extra``: more pytest arguments."""
    (folder / "cases.json").write_text(json.dumps({"cases": [case(serve_args, shape)]}))
    results = folder / "results.json"
    results.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
        "--diffperf=pr_test", "--diffperf-baselines=baselines.json", "--diffperf-cases=cases.json",
        "--diffperf-server=reference", "--diffperf-hardware=cpu", f"--diffperf-json={results}", *extra,
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False, env=env())
    wall = time.monotonic() - started
    (folder / "last-run.txt").write_text(done.stdout + done.stderr)
    if keep is not None and results.is_file():
        n = len(list(keep.glob("run-*.json"))) + 1
        (keep / f"run-{n:02d}.json").write_bytes(results.read_bytes())
        (keep / f"run-{n:02d}.txt").write_text(done.stdout + done.stderr)
    if not results.is_file():
        return {"outcome": "no results"}, wall
    return why(json.loads(results.read_text())["scenarios"][0]), wall


def why(scenario: dict[str, Any]) -> dict[str, Any]:
    """A scenario's outcome, fresh servers, e2e's judgement, and what the interference check did."""
    noise = scenario.get("noise") or {}
    e2e: dict[str, Any] = next((c for c in noise.get("checks", []) if c["name"] == "e2e"), {})
    interference = scenario.get("interference") or {}
    windows = interference.get("windows") or [{}]
    return {
        "outcome": scenario["outcome"],
        "servers": noise.get("attempts"),
        "e2e": {k: e2e.get(k) for k in ("verdict", "judged_by", "actual", "low", "high", "expected", "limit")},
        "interference": interference.get("effect"),
        "outside_cpu_share": max((w.get("cpu_share") or 0.0) for w in windows),
        "reason": (scenario.get("message") or "").split("\n")[0][:160],
    }


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def record(folder: Path, shape: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """The two steps' first: measure against a placeholder, then accept the run's results as the baseline."""
    bundled = json.loads((REPO / "data" / "perf_baselines" / "cpu.json").read_text())
    doc = {"metadata": {"hardware": "cpu"}, "tolerances": bundled["tolerances"], "sampling": bundled["sampling"],
           "scenarios": {"tiny": GENEROUS}}  # fmt: skip
    (folder / "baselines.json").write_text(json.dumps(doc, indent=4))
    (folder / "pytest.ini").write_text("[pytest]\n")
    pytest_run(folder, shape=shape, extra=extra)
    accept = [sys.executable, "-m", "pytest_diffperf.cli", "accept", "results.json", "--baselines=baselines.json",
              "--accept-busy"]  # fmt: skip  # a busy recording is part of what this benchmark measures
    done = subprocess.run(accept, cwd=folder, capture_output=True, text=True, check=False, env=env())
    if done.returncode != 0:
        raise SystemExit(f"diffperf accept failed:\n{done.stdout}{done.stderr}")
    entry: dict[str, Any] = json.loads((folder / "baselines.json").read_text())["scenarios"]["tiny"]
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--json", help="write the counts and every run here")
    parser.add_argument(
        "--smoke", action="store_true", help="one trial, tests shape, one server a run (CI: the script still runs)"
    )
    parser.add_argument("--shape", choices=sorted(SHAPES), default="bundled", help="the scenario's image and steps")
    parser.add_argument("--keep", type=Path, help="copy every run's results file and output into this folder")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    extra: tuple[str, ...] = ()
    if args.smoke:  # what the figures need (re-measures, the bundled shape) is not what proves the script runs
        # and no wait for a quiet machine (up to --diffperf-quiet-wait's 120 s) beside the test suite's other worker
        args.trials, args.shape, extra = 1, "tests", ("--diffperf-remeasure=1", "--diffperf-busy-share=off")
    with tempfile.TemporaryDirectory(prefix="diffperf-bench-local-") as tmp:
        folder = Path(tmp)
        started = time.monotonic()
        baseline = record(folder, args.shape, extra)
        delay = round(baseline["expected_e2e_ms"], 1)
        print(f"recorded: e2e {baseline['expected_e2e_ms']} ms, load {baseline.get('expected_load_ms')} ms; 2x: "
              f"DenoisingStage +{delay} ms", flush=True)  # fmt: skip
        runs: list[dict[str, Any]] = []
        for trial in range(args.trials):
            for kind, serve_args in (("no change", ""), ("2x", f"--inject-delay DenoisingStage={delay}")):
                run, wall = pytest_run(folder, serve_args, args.keep, args.shape, extra)
                load = os.getloadavg()[0]
                runs.append({"trial": trial, "kind": kind, **run, "wall_s": round(wall, 1), "load1": load})
                e2e = run.get("e2e") or {}
                print(f"trial {trial + 1}: {kind}: {run['outcome']} ({wall:.0f} s, load {load:.1f}; "
                      f"{run.get('servers')} server(s), e2e {e2e.get('verdict')} by {e2e.get('judged_by')} "
                      f"{e2e.get('actual')} [{e2e.get('low')}, {e2e.get('high')}] vs {e2e.get('limit')}; "
                      f"interference {run.get('interference')})", flush=True)  # fmt: skip
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
