"""`diffperf bisect` on a throwaway repository of 8 commits, one of which slows the reference server."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gitrepo import commit, init, inject_delay, with_plugin, worktrees
from tests.support.suite import GENEROUS, TOLERANCES, refservers, tiny_case

pytestmark = [
    pytest.mark.server,  # starts server processes
    pytest.mark.skipif(
        any(importlib.util.find_spec(name) is None for name in ("torch", "diffusers")),
        reason="each step serves the reference server: needs the server extra (not in a plugin-only install)",
    ),
]

# One process pair of two request pairs per step, at a 100 % tolerance: a 1.5 s sleep in a tiny case's
# denoising stage (e2e 0.1-0.7 s here, even on a loaded machine) is regressed, no change unchanged.
BUDGET = ["--diffperf-ab-min-process-pairs=1", "--diffperf-ab-max-process-pairs=2", "--diffperf-ab-request-pairs=2",
          "--diffperf-ab-tolerance=100%"]  # fmt: skip


def test_bisect_finds_the_commit_that_slowed_the_server(tmp_path):
    repo = with_plugin(init(tmp_path / "repo"))
    (repo / "cases.json").write_text(json.dumps({"cases": [tiny_case("tiny", perf_warmup_requests=1)]}))
    baseline = {"metadata": {"hardware": "cpu"}, "tolerances": TOLERANCES,
                "sampling": {"step_fractions": [0.0, 0.5, 1.0]}, "scenarios": {"tiny": GENEROUS}}  # fmt: skip
    (repo / "baselines.json").write_text(json.dumps(baseline))
    commits = [commit(repo, "c1: the suite")]
    for n in range(2, 9):
        (repo / "notes.txt").write_text(f"{n}\n")
        if n == 5:
            inject_delay(repo, "DenoisingStage", 1500)
        commits.append(commit(repo, f"c{n}: {'a slower denoising stage' if n == 5 else 'notes'}"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable, "-m", "pytest_diffperf.cli", "bisect", "--good", commits[0], "--bad", "HEAD",
        "--json=bisect.json", "--", "--diffperf=pr_test", "--diffperf-baselines=baselines.json",
        "--diffperf-cases=cases.json", "--diffperf-server=reference", "--diffperf-hardware=cpu", "-p",
        "no:cacheprovider", *BUDGET,
    ]  # fmt: skip
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=1500)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    doc = json.loads((repo / "bisect.json").read_text())
    assert doc["first_bad"]["commit"] == commits[4], out
    assert doc["first_bad"]["explained_by"].startswith("DenoisingStage"), out
    assert [s["commit"] for s in doc["steps"]] == [commits[3], commits[5], commits[4]], out  # c4, c6, c5
    assert [s["mark"] for s in doc["steps"]] == ["good", "bad", "bad"]
    assert out.startswith("diffperf bisect: 7 commit(s) after ")
    # an inconclusive step is run once more with twice the budget (a busy machine): it says "(retried)"
    assert re.search(rf"step 1: {commits[3][:12]} 'c4: notes': unchanged( \(retried\))? \(good\), e2e ", out), out
    assert f"first bad commit: {commits[4]} 'c5: a slower denoising stage': regressed: e2e +" in out
    assert "; stage: DenoisingStage explains " in out
    step = doc["steps"][0]
    assert step["requests"] > 0 and step["wall_s"] > 0 and step["interval"].startswith("e2e ")
    first_step = json.loads(Path(step["results"]).read_text())
    assert (first_step["base_commit"], first_step["candidate_commit"]) == (commits[0], commits[3])
    assert worktrees(repo) == [] and not refservers()
