"""Regenerate the "Current figures" section of docs/benchmarks.md: run each benchmark, write its output there.

    python scripts/benchmark_figures.py [--only bench_suite,bench_baselines] [--smoke] [--doc docs/benchmarks.md]

Each benchmark runs at the size in FIGURES below, one after another, from the repository root; its
block (between ``<!-- figures: NAME -->`` and ``<!-- /figures: NAME -->``) gets the command, the
date, the commit, the machine's cores and its 1-minute load average before and after, and the
output. ``--only`` reruns some and keeps the other blocks as they are. What follows the section is
never touched: move a superseded figure to docs/benchmarks-archive.md by hand, with its date, when it
matters.
``--smoke`` runs each at its ``--smoke`` size (what tests/test_benchmarks.py checks).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# benchmark -> its arguments for the current figures (the sizes the log's figures were taken at)
FIGURES = {
    "bench_suite": [],
    "bench_baselines": ["--repeats", "30"],
    "bench_collection": ["--repeats", "9"],
    "bench_refserver": ["--repeats", "7"],
    "bench_consistency": ["--repeats", "5"],
    "bench_bundled_suite": ["--runs", "1"],
    "bench_bundled_noise": ["--processes", "6", "--requests", "5"],
    "bench_verdicts": [],
    "bench_machine_local": ["--trials", "10"],
}
START, END = "<!-- current figures -->", "<!-- /current figures -->"


def block(name: str, args: list[str]) -> str:
    command = [sys.executable, f"benchmarks/{name}.py", *args]
    load = os.getloadavg()[0]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{name} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    output = proc.stdout.strip()
    if "|---|" not in output:  # plain lines: kept as printed
        output = f"```\n{output}\n```"
    return (
        f"<!-- figures: {name} -->\n### {name}\n\n"
        f"`python {shlex.join(command[1:])}` at {commit.stdout.strip() or '?'}, {when}, {os.cpu_count()} cores, "
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after:\n\n"
        f"{output}\n<!-- /figures: {name} -->"
    )


def replace_blocks(section: str, blocks: dict[str, str]) -> str:
    found = {m[1]: m[0] for m in re.finditer(r"(?s)<!-- figures: (\w+) -->.*?<!-- /figures: \1 -->", section)}
    merged = {name: blocks.get(name) or found.get(name) for name in FIGURES}
    return "\n\n".join(text for text in merged.values() if text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help=f"comma-separated, of: {', '.join(FIGURES)}")
    parser.add_argument("--smoke", action="store_true", help="each benchmark at its --smoke size")
    parser.add_argument("--doc", type=Path, default=REPO / "docs" / "benchmarks.md")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(FIGURES)
    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)}; known: {', '.join(FIGURES)}")
    text = args.doc.read_text()
    if text.count(START) != 1 or text.count(END) != 1:
        parser.error(f"{args.doc}: expected one {START} ... {END} section")
    head, rest = text.split(START)
    section, tail = rest.split(END)
    blocks = {name: block(name, ["--smoke"] if args.smoke else FIGURES[name]) for name in names}
    args.doc.write_text(f"{head}{START}\n{replace_blocks(section, blocks)}\n{END}{tail}")
    print(f"{args.doc}: {', '.join(names)} regenerated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
