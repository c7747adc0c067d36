"""What A/B costs on the bundled suite when a server takes long to load: wall time and server starts, against static mode.

Runs ``pytest --diffperf=pr_test`` at the repo root (the reference server on this machine) with
every case's servers sleeping ``--load-delay`` seconds before they load (``--inject-load-delay``,
as a GPU server's 30-60 s start; the baselines' load times raised by as much), once per mode, one
after another:

- ``static``: the candidate alone against the stored baseline (one server per server group);
- ``A/B before``: the base build against the candidate, each scenario on fresh process pairs of its
  own, one after another (``--before PATH``: that checkout's code, e.g. a worktree of the commit
  before issue 25's item 3; without it: this code with ``--diffperf-ab-pairs=scenario
  --diffperf-ab-prestart=0``);
- ``A/B after``: this code's defaults (a server group's scenarios share process pairs, one pair
  started ahead).

The candidate is ``--effect``: ``slower`` sleeps 300 ms inside DenoisingStage (the README's A/B
job: every scenario stops after the minimum of 2 process pairs), ``none`` is the base build
itself (an A/A run: unchanged scenarios run until their interval is inside the tolerance, up to 10
process pairs). Every mode runs with ``--diffperf-busy-share=off``: on a shared machine static mode
would otherwise wait for quiet (A/B keeps its verdicts under load anyway). Server starts are counted from the run's progress lines (``diffperf: starting
...``), so a pair started ahead and never measured counts too; load batches are the runs of starts with no server
ready between them (servers loading at the same time count once).

    python benchmarks/bench_ab_cost.py [--load-delay 30] [--effect slower] [--before PATH] [--modes static,after,before]

``--smoke``: the cheapest scenario, a 1 s load delay, 2 process pairs of 1 request pair, static and after, outputs
not compared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EFFECTS = {"slower": "args=--inject-delay DenoisingStage=300", "none": "current"}
SMOKE = ["-k", "flux_kontext_tiny_edit", "--diffperf-ab-max-process-pairs=2", "--diffperf-ab-request-pairs=1",
         "--diffperf-remeasure=1"]  # fmt: skip


def delayed_suite(folder: Path, delay_s: float) -> list[str]:
    """The bundled cases with every server loading ``delay_s`` later (input paths made absolute), and the baselines
    expecting it (static mode would fail every load check, and re-measure each scenario to confirm it)."""
    doc = json.loads((REPO / "data" / "cases.json").read_text())
    for case in doc["cases"]:
        for entry in case.get("frameworks", {}).values():
            entry["serve_args"] = f"{entry.get('serve_args', '')} --inject-load-delay {delay_s * 1000:.0f}".strip()
        for key, value in case.items():
            if isinstance(value, str) and value.startswith("data/") and (REPO / value).exists():
                case[key] = str(REPO / value)
    baselines = json.loads((REPO / "data" / "perf_baselines" / "cpu.json").read_text())
    for scenario in baselines["scenarios"].values():
        scenario["expected_load_ms"] += delay_s * 1000
    (folder / "cases.json").write_text(json.dumps(doc, indent=1))
    (folder / "cpu.json").write_text(json.dumps(baselines, indent=1))
    return [f"--diffperf-cases={folder / 'cases.json'}", f"--diffperf-baselines={folder / 'cpu.json'}"]


def run(
    mode: str, suite: list[str], candidate: str, extra: list[str], before: Path | None, skip_outputs: bool
) -> dict[str, Any]:
    ab = {
        "static": [],
        "before": [] if before else ["--diffperf-ab-pairs=scenario", "--diffperf-ab-prestart=0"],
        "after": [],
    }[mode]
    if mode != "static":
        ab = ["--diffperf-base=current", f"--diffperf-candidate={candidate}", *ab]
    tree = before if mode == "before" and before else REPO  # also the folder it runs in: python -m puts it first
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    if skip_outputs:
        env["DIFFPERF_SKIP_CONSISTENCY"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "--diffperf=pr_test", *suite,
             f"--diffperf-json={results}", "--diffperf-busy-share=off", "-q", "-p", "no:cacheprovider", *ab, *extra],
            cwd=tree, capture_output=True, text=True, env=env,
        )  # fmt: skip
        wall = time.perf_counter() - started
        if proc.returncode not in (0, 1) or not results.exists():  # 1: a scenario failed (regressed, a busy machine)
            sys.exit(f"{mode}: the suite did not run:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        doc = json.loads(results.read_text())
    verdicts: dict[str, int] = {}
    pairs = []
    for s in doc["scenarios"]:
        verdict = s["ab"]["verdict"] if s.get("ab") else s["verdict"]
        verdicts[verdict] = verdicts.get(verdict, 0) + 1
        if s.get("ab"):
            pairs.append(s["ab"]["process_pairs"])
    return {
        "mode": mode,
        "wall_s": wall,
        "starts": len(re.findall(r"diffperf: starting ", proc.stdout)),  # a line may follow a test's letter
        "batches": load_batches(proc.stdout),
        "scenarios": len(doc["scenarios"]),
        "verdicts": verdicts,
        "process_pairs": pairs,
    }


def load_batches(out: str) -> int:
    """Rounds of server loads: runs of ``starting`` lines with no server ready between them (static mode: one per
    server; A/B: the pairs of a group started together)."""
    starts = [e.startswith("diffperf") for e in re.findall(r"diffperf: starting |ready after ", out)]
    return sum(1 for i, start in enumerate(starts) if start and (i == 0 or not starts[i - 1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load-delay", type=float, default=30.0, help="seconds every server sleeps before it loads")
    parser.add_argument("--effect", choices=sorted(EFFECTS), default="slower")
    parser.add_argument("--before", type=Path, help="a checkout of the code before (its A/B: fresh pairs per scenario)")
    parser.add_argument("--modes", default="static,after,before")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--smoke", action="store_true", help="one scenario, 1 s loads, static and after")
    a = parser.parse_args()
    modes = ["static", "after"] if a.smoke else a.modes.split(",")
    delay = 1.0 if a.smoke else a.load_delay
    extra = SMOKE if a.smoke else []
    rows = []
    print(f"# bench_ab_cost: load delay {delay:g} s, candidate {EFFECTS[a.effect]}, before: {a.before or 'options'}")
    with tempfile.TemporaryDirectory() as tmp:
        suite = delayed_suite(Path(tmp), delay)
        for mode in modes:
            rows.append(run(mode, suite, EFFECTS[a.effect], extra, a.before, skip_outputs=a.smoke))
            print(f"  {mode}: {rows[-1]['wall_s']:.0f} s", flush=True)
    static = next((r["wall_s"] for r in rows if r["mode"] == "static"), None)
    print(
        "\n| mode | wall s | x static | server starts | load batches | scenarios | verdicts | process pairs per scenario |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['wall_s'] / static:.2f}" if static else "-"
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items()))
        pairs = " ".join(map(str, r["process_pairs"])) or "-"
        print(
            f"| {r['mode']} | {r['wall_s']:.0f} | {ratio} | {r['starts']} | {r['batches']} | {r['scenarios']} | {verdicts} "
            f"| {pairs} |"
        )
    if a.json:
        a.json.write_text(json.dumps({"load_delay_s": delay, "effect": a.effect, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
