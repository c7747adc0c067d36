"""The busy-machine bound as the bars check it: known slowdowns beside 0, 1 and 2 CPU burners, static mode.

At the repo root (the reference server on this machine, ``data/cases.json``'s cheapest scenario):

1. ``pytest --regen-baselines --accept-busy``: the scenario's baseline recorded here, into a copy (no burners), at
   ``nice -15`` (its servers too): a machine shared with other jobs is never quiet (regeneration refuses a busy
   measurement without ``--accept-busy``), so the baseline is as near a quiet machine's as it gets, and its entry
   stores its request's own wait for a CPU (``request_cpu``), which the bound subtracts; a user without the right
   to raise priority gets the baseline at their own priority (``nice`` says so);
2. five copies of the scenario, slowed x1 (none), x1.5, x2, x3 and x4 (each candidate's DenoisingStage sleeping
   ``(x - 1)`` times its baseline e2e), judged in one run against that baseline;
3. that run ``--runs`` times with 0, 1 and 2 CPU burners in turn (outside the run's process tree, started
   ``--settle`` seconds before), the servers forked by a fork server, ``--diffperf-quiet-wait=0``: a fail
   measured busy is at once a fail beyond the bound or inconclusive (machine busy), never re-measured quiet.

Prints per slowdown and load the fail / inconclusive / pass counts, with the load average the runs saw (the
machine's other users included: it is not this script's to quiet). Outputs are not compared.

    python benchmarks/bench_busy.py [--runs 10] [--settle 10] [--json out.json] [--smoke]

``--smoke``: one run of x1 and x4 beside one burner (CI checks that the script still runs).
``--table FILE ...``: no runs; the table of the runs saved with ``--json`` in these files (``.json.gz`` too), merged
per load (several sessions' runs of the same code).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_diffperf.protocol import FORKSERVER_ENV

REPO = Path(__file__).resolve().parent.parent
SCENARIO = "flux_kontext_tiny_edit"  # the cheapest bundled scenario (e2e ~170 ms on the 2-core AMD EPYC VM)
SLOWDOWNS = (1.0, 1.5, 2.0, 3.0, 4.0)
# a burner spins for two hours at most, and ends with this script however it ends (its parent changes)
BURN = "import os, time\nparent, end = os.getppid(), time.monotonic() + 7200\nwhile time.monotonic() < end and os.getppid() == parent:\n    pass\n"
OUTCOMES = ("fail", "inconclusive", "pass")
QUIET_NICE = -15  # the baseline's run and servers: first in line for the CPUs, as on a quiet machine (root only)
SERVER_ENV = {"HF_HUB_DISABLE_TELEMETRY": "1"}  # what a run's pytest sets by the time it starts a server


def pytest_at_root(*args: str, forks: str = "", nice: int = 0) -> int:
    command = ["nice", "-n", str(nice), sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    env = {**os.environ, **SERVER_ENV, "DIFFPERF_SKIP_CONSISTENCY": "1", **({FORKSERVER_ENV: forks} if forks else {})}
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-2000:], flush=True)
    return proc.returncode


@contextlib.contextmanager
def fork_server(folder: Path) -> Iterator[str]:
    """The reference server's fork server (servers start in 0.5 s, not 5: more runs in the time); its address."""
    sock = folder / "forks.sock"
    command = [sys.executable, "-m", "pytest_diffperf.refserver", "forkserver", "--socket", str(sock)]
    env = {**os.environ, **SERVER_ENV}  # as the run's servers have it, or the fork server refuses them
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    try:
        while not sock.exists() and proc.poll() is None:
            time.sleep(0.05)
        yield f"{proc.pid}:{sock}"
    finally:
        proc.terminate()
        proc.wait()


def burners(count: int) -> list[subprocess.Popen[bytes]]:
    """CPU burners in their own session: not descendants of the pytest run (this script is its parent, not theirs)."""
    return [subprocess.Popen([sys.executable, "-c", BURN], start_new_session=True) for _ in range(count)]


def slowed_cases(folder: Path, baseline: Path, slowdowns: tuple[float, ...]) -> Path:
    """The scenario once per slowdown (``<id>_x<k>``), each with the baseline's entry: the cases file's path."""
    cases = json.loads((REPO / "data/cases.json").read_text())
    doc = json.loads(baseline.read_text())
    entry = doc["scenarios"][SCENARIO]
    case = next(c for c in cases["cases"] if c["id"] == SCENARIO)
    slowed, doc["scenarios"] = [], {}
    for k in slowdowns:
        copy = json.loads(json.dumps(case))
        copy["id"] = f"{SCENARIO}_x{k:g}"
        delay = round((k - 1) * entry["expected_e2e_ms"], 1)
        if delay:
            copy["frameworks"]["reference"]["serve_args"] += f" --inject-delay DenoisingStage={delay}"
        slowed.append(copy)
        doc["scenarios"][copy["id"]] = entry
    baseline.write_text(json.dumps(doc, indent=2) + "\n")
    path = folder / "slowed.json"
    path.write_text(json.dumps({**cases, "cases": slowed}))
    return path


def one_run(args: list[str], out: Path, forks: str) -> dict[str, Any]:
    """Each scenario's verdict and its windows' peak load average and outside CPU share."""
    pytest_at_root(*args, f"--diffperf-json={out}", forks=forks)
    doc = json.loads(out.read_text())
    found = {}
    for s in doc["scenarios"]:
        windows = (s.get("interference") or {}).get("windows", [])
        found[s["scenario"]] = {
            "verdict": s["verdict"],
            "load": max((w["load_avg"][0] for w in windows), default=None),
            "share": max((w["cpu_share"] for w in windows), default=None),
            "first_line": s["message"].splitlines()[0] if s["message"] else "",
            "message": s["message"],
            "rows": [
                (r.get("e2e_ms"), r.get("cpu_ms"), r.get("wait_ms"))
                for r in doc["rows"]
                if r["scenario"] == s["scenario"]
            ],
        }
    return found


def table(runs: dict[int, list[dict[str, Any]]], slowdowns: tuple[float, ...]) -> str:
    lines = [
        "| slowdown | burners | fail | inconclusive | pass | runs | load average | outside CPU share |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for k in slowdowns:
        sid = f"{SCENARIO}_x{k:g}"
        for burn, found in runs.items():
            rows = [run[sid] for run in found if sid in run]
            counts = [sum(r["verdict"] == o for r in rows) for o in OUTCOMES]
            loads = [r["load"] for r in rows if r["load"] is not None]
            shares = [r["share"] for r in rows if r["share"] is not None]
            load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
            share = f"{min(shares):.0%}-{max(shares):.0%}" if shares else "-"
            lines.append(f"| x{k:g} | {burn} | {' | '.join(map(str, counts))} | {len(rows)} | {load} | {share} |")
    return "\n".join(lines)


def saved_runs(paths: list[Path]) -> dict[int, list[dict[str, Any]]]:
    """The runs of these ``--json`` files, per number of burners, in the files' order (SystemExit naming a file
    that is not one)."""
    runs: dict[int, list[dict[str, Any]]] = {}
    for path in paths:
        try:
            with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
                for burn, found in json.load(f)["runs"].items():
                    runs.setdefault(int(burn), []).extend(found)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SystemExit(f"bench_busy: {path}: not a results file of bench_busy.py --json ({exc!r})") from None
    return dict(sorted(runs.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--settle", type=float, default=10.0, help="seconds the burners run before a run")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help="one run of x1 and x4 beside one burner")
    parser.add_argument("--table", type=Path, nargs="+", metavar="FILE", help="print the table of saved runs only")
    args = parser.parse_args()
    if args.table:
        print(table(saved_runs(args.table), SLOWDOWNS))
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench_busy: terminated"))  # burners and fork server ended
    slowdowns = (1.0, 4.0) if args.smoke else SLOWDOWNS
    loads = (1,) if args.smoke else (0, 1, 2)
    runs_each, settle = (1, 0.0) if args.smoke else (args.runs, args.settle)
    runs: dict[int, list[dict[str, Any]]] = {}
    common: list[str] = []
    entry: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, fork_server(Path(tmp)) as forks:
        folder = Path(tmp)
        baseline = folder / "cpu.json"
        shutil.copy(REPO / "data/perf_baselines/cpu.json", baseline)
        print(f"== the baseline of {SCENARIO}, recorded here (load average {os.getloadavg()[0]:.2f})", flush=True)
        regen = ("--regen-baselines", "--accept-busy", f"--diffperf-baselines={baseline}", "-k", SCENARIO)
        if pytest_at_root(*regen, nice=QUIET_NICE) != 0:
            raise SystemExit(f"bench_busy: the baseline of {SCENARIO} was not recorded (see above)")
        entry = json.loads(baseline.read_text())["scenarios"][SCENARIO]
        print(f"   e2e {entry['expected_e2e_ms']} ms, its request's CPU time and wait: {entry.get('request_cpu')}")
        cases = slowed_cases(folder, baseline, slowdowns)
        common = [
            "--diffperf=pr_test", f"--diffperf-baselines={baseline}", f"--diffperf-cases={cases}",
            "--diffperf-busy-share=25%", "--diffperf-quiet-wait=0",
        ]  # fmt: skip
        runs = {burn: [] for burn in loads}
        for n in range(runs_each):  # the loads in turn: an interrupted benchmark still has them all
            for burn in loads:
                procs = burners(burn)
                try:
                    time.sleep(settle if burn else 0.0)
                    started = time.monotonic()
                    found = one_run(common, folder / f"run-{burn}-{n}.json", forks)
                    runs[burn].append(found)
                finally:
                    for p in procs:
                        p.kill()
                        p.wait()
                verdicts = ", ".join(f"{sid.rsplit('_', 1)[1]} {r['verdict']}" for sid, r in found.items())
                print(f"   {burn} burner(s), run {n + 1}: {verdicts} ({time.monotonic() - started:.0f} s, "
                      f"load average {os.getloadavg()[0]:.2f})", flush=True)  # fmt: skip
            if args.json:
                args.json.write_text(json.dumps({"options": common, "baseline": entry, "runs": runs}, indent=2) + "\n")
    print(table(runs, slowdowns), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"options": common, "baseline": entry, "runs": runs}, indent=2) + "\n")


if __name__ == "__main__":
    main()
