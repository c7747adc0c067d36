"""`diffperf bisect --good REV --bad REV [-k EXPR] [--metric e2e|STAGE] -- PYTEST-ARGS`: the commit that regressed.

Each step is an A/B run (``bisect.step``) of the good commit against the commit ``bisect.search``
picks: ``regressed`` is bad, ``unchanged`` and ``improved`` good; ``inconclusive`` is run once
more with twice the budget it spent, then skipped. Worktrees are kept for the bisect's length
(the good commit's serves every step) and removed at its end; with ``--install`` each commit's
venv is built once and cached. Every step is printed and written to the results file.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._util import git
from .._util.atomicfile import write_atomic
from .._util.outputs import check_writable
from ..bisect.search import Mark, Search
from ..bisect.step import Sides, StepResult, metric_name, run_step
from ..errors import DiffperfError

MARKS: dict[str, Mark] = {"regressed": "bad", "unchanged": "good", "improved": "good", "inconclusive": "skip"}
RESULTS_VERSION = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "bisect",
        usage="diffperf bisect --good REV --bad REV [-k EXPR] [--metric e2e|STAGE] [options] -- PYTEST-ARGS",
        help="find the commit that regressed, with an A/B run per step",
        description="Bisect the commits after --good up to --bad: each step runs pytest with the arguments after "
        "'--' as an A/B run of the good commit (--diffperf-base=git=GOOD) against the step's commit "
        "(--diffperf-candidate=git=COMMIT); regressed is bad, unchanged or improved good, inconclusive is "
        "retried once with twice the budget, then skipped. Prints each step and the first bad commit with "
        "the stage that explains it; writes every step to --json. Exit status 0 when a first bad commit was "
        "found, 1 when skips leave several.",
        epilog="example: diffperf bisect --good v0.5.12 --bad origin/main --subdir python -k flux -- "
        "--diffperf=pr_test --diffperf-cases=cases.json --diffperf-baselines=perf_baselines/",
    )
    parser.add_argument("--good", required=True, metavar="REV", help="a revision without the regression")
    parser.add_argument("--bad", required=True, metavar="REV", help="a later revision with it")
    parser.add_argument("-k", metavar="EXPR", help="the scenarios to run (pytest's -k)")
    parser.add_argument(
        "--metric", help="judge by this metric alone: e2e or a stage (DenoisingStage); default: the gated ones"
    )
    parser.add_argument("--repo", default=".", help="the repository (default: the one of the current folder)")
    parser.add_argument("--subdir", default="", help="the folder of the repository each side serves (git=REV:SUBDIR)")
    parser.add_argument(
        "--install",
        nargs="?",
        const="",
        metavar="PIP-ARGS",
        help="pip install each commit's SUBDIR into a venv cached by commit (optionally with pip's arguments)",
    )
    parser.add_argument("--json", default="diffperf-bisect.json", help="the results file (default: %(default)s)")
    parser.set_defaults(func=run, passthrough=[])  # pytest's arguments: what follows "--"


def run(args: argparse.Namespace) -> int:
    output = Path(args.json)
    check_writable(output, "--json")
    metric = metric_name(args.metric)
    repo = git.toplevel(Path(args.repo))
    if repo is None:
        raise DiffperfError(f"{Path(args.repo).absolute()} is not in a git repository", source="--repo")
    good, bad = (_commit(repo, rev, flag) for rev, flag in ((args.good, "--good"), (args.bad, "--bad")))
    subdir = args.subdir.strip("/")
    for commit, flag in ((good, "--good"), (bad, "--bad")):  # before any step: its pytest would say so 13 s later
        if subdir and not git.has_path(repo, commit, subdir):
            raise DiffperfError(f"{flag} {commit[:12]} of {repo} has no {subdir!r}", source="--subdir")
    commits = git.commits_between(repo, good, bad)
    if not commits or commits[-1] != bad:
        raise DiffperfError(f"{args.good} ({good[:12]}) is not an ancestor of {args.bad} ({bad[:12]})", source="--bad")
    pytest_args = [*args.passthrough, *(["-k", args.k] if args.k else [])]
    search = Search(commits)
    doc: dict[str, Any] = {"version": RESULTS_VERSION, "good": good, "bad": bad, "metric": metric,
                           "pytest_args": pytest_args, "steps": []}  # fmt: skip
    steps = output.absolute().parent / f"{output.stem}-steps"  # the results file names them: absolute paths
    steps.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.mkdtemp(prefix="diffperf-bisect-")) if args.install is None else None
    sides = Sides(repo, subdir, args.install, cache)
    print(
        f"diffperf bisect: {len(commits)} commit(s) after {good[:12]} up to {bad[:12]}: "
        f"about {search.steps_left()} step(s); logs: {steps}",
        flush=True,
    )
    started = time.monotonic()
    try:
        while (index := search.next()) is not None:
            commit = commits[index]
            result, retried = _step(sides, good, commit, pytest_args, steps, len(doc["steps"]) + 1, metric)
            mark = MARKS[result.verdict]
            search.mark(index, mark)
            record = _record(repo, commit, result, retried, mark)
            doc["steps"].append(record)
            print(f"step {len(doc['steps'])}: {_line(record)}; {search.steps_left()} step(s) left", flush=True)
            write_atomic(output, json.dumps(doc, indent=2) + "\n")
    finally:
        if cache is not None:
            for folder in cache.iterdir():
                git.remove_worktree(repo, folder)
            shutil.rmtree(cache, ignore_errors=True)
    suspects = search.suspects()
    tested = {step["commit"]: step for step in doc["steps"]}
    if len(suspects) == 1:
        step = tested.get(suspects[0])
        doc["first_bad"] = {"commit": suspects[0], "subject": git.subject(repo, suspects[0]),
                            "headline": step["headline"] if step else None,
                            "explained_by": step["explained_by"] if step else None}  # fmt: skip
    doc["suspects"], doc["wall_s"] = suspects, round(time.monotonic() - started, 1)
    write_atomic(output, json.dumps(doc, indent=2) + "\n")
    if len(suspects) == 1:
        first = doc["first_bad"]
        why = f": {first['headline']}" if first["headline"] else " (the --bad commit: no step tested it)"
        stage = f"; stage: {first['explained_by']}" if first["explained_by"] else ""
        print(f"first bad commit: {suspects[0]} {first['subject']!r}{why}{stage}")
    else:
        listed = ", ".join(f"{c[:12]} {git.subject(repo, c)!r}" for c in suspects)
        print(f"the first bad commit is one of (skipped steps left them open): {listed}")
    print(f"results: {output}")
    return 0 if len(suspects) == 1 else 1


def _commit(repo: Path, rev: str, flag: str) -> str:
    commit = git.commit_of(repo, rev)
    if commit is None:
        raise DiffperfError(f"revision {rev!r} does not exist in {repo}", source=flag)
    return commit


def _step(
    sides: Sides, good: str, commit: str, pytest_args: list[str], steps: Path, number: int, metric: str | None
) -> tuple[StepResult, bool]:
    """One step's A/B run, and once more with twice the budget it spent when it was inconclusive."""
    result = run_step(sides, good, commit, pytest_args, steps, f"step-{number}", metric)
    if result.verdict != "inconclusive":
        return result, False
    print(f"step {number}: {commit[:12]} inconclusive ({result.interval()}); again with twice the budget", flush=True)
    budget = [
        f"--diffperf-ab-max-requests={2 * max(result.requests, 1)}",
        f"--diffperf-ab-max-process-pairs={2 * max(result.process_pairs, 1)}",
    ]
    again = run_step(sides, good, commit, pytest_args, steps, f"step-{number}-retry", metric, budget)
    return replace(again, wall_s=result.wall_s + again.wall_s, requests=result.requests + again.requests), True


def _record(repo: Path, commit: str, result: StepResult, retried: bool, mark: Mark) -> dict[str, Any]:
    m = result.metric
    return {
        "commit": commit,
        "subject": git.subject(repo, commit),
        "verdict": result.verdict,
        "mark": mark,
        "retried": retried,
        "scenario": result.scenario,
        "metric": m.name if m else None,
        "ratio": m.ratio if m else None,
        "low": m.low if m else None,
        "high": m.high if m else None,
        "interval": result.interval(),
        "headline": result.record.headline,
        "explained_by": result.explained_by() if result.verdict == "regressed" else None,
        "requests": result.requests,
        "wall_s": round(result.wall_s, 1),
        "results": str(result.results),
        "log": str(result.log),
    }


def _line(record: dict[str, Any]) -> str:
    retried = " (retried)" if record["retried"] else ""
    return (
        f"{record['commit'][:12]} {record['subject']!r}: {record['verdict']}{retried} ({record['mark']}), "
        f"{record['interval']}, {record['requests']} requests, {record['wall_s']:.0f} s"
    )
