"""`diffperf plan`: the shards of SGLang's real H100 suite, and the command's output and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_diffperf.perf.baselines import load_baselines, select_scenarios
from pytest_diffperf.sharding.plan import assign, server_groups
from tests.support.cli import Result, diffperf

REPO = Path(__file__).resolve().parents[2]
BUNDLED = ["data/perf_baselines/cpu.json", "--cases", "data/cases.json", "--hardware", "cpu", "--server", "reference"]


def plan(*args: str, env: dict | None = None) -> Result:
    """``diffperf plan ARGS`` in this process, paths relative to the repository."""
    return diffperf("plan", *args, env=env, cwd=REPO)


def test_h100_plans_are_balanced_and_cover_every_scenario_once(sglang_data):
    baselines = load_baselines(sglang_data / "v0.5.23" / "perf_baselines", "h100")
    ids = select_scenarios(baselines, {}, "h100")
    groups = server_groups(ids, baselines.scenarios, lambda sid: sid)
    total = sum(g.cost_s for g in groups)
    assert len(ids) == 84 and total == pytest.approx(10199.2)
    for n in range(2, 11):
        shards = assign(groups, n)
        placed = [sid for s in shards for sid in s.scenarios]
        assert sorted(placed) == sorted(ids)  # each scenario in exactly one shard
        bound = max(total / n, max(g.cost_s for g in groups))
        ratio = max(s.estimated_s for s in shards) / bound
        print(
            f"N={n}: makespan {max(s.estimated_s for s in shards):.1f} s, lower bound {bound:.1f} s, ratio {ratio:.4f}"
        )
        assert ratio <= 1.05


@pytest.mark.server
def test_h100_plan_is_the_same_from_two_processes(sglang_data):
    folder = str(sglang_data / "v0.5.23" / "perf_baselines")
    script = (
        "import sys; from pytest_diffperf.cli import main\n"
        f"for n in range(2, 11): main(['plan', {folder!r}, '--hardware', 'h100', '--shards', str(n)])\n"
    )
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script], check=False, capture_output=True, text=True, env=env, cwd=REPO
        )
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    matrices = [json.loads(line) for line in outputs[0].splitlines()]
    assert [len(m["include"]) for m in matrices] == list(range(2, 11))


def test_bundled_plan_keeps_server_groups_together():
    result = plan(*BUNDLED, "--shards", "2")
    assert result.returncode == 0, result.stderr
    assert "\n" not in result.stdout.strip()  # one line, for $GITHUB_OUTPUT
    matrix = json.loads(result.stdout)
    assert matrix == {
        "include": [
            {"shard": 1, "of": 2, "scenarios": ["sd_tiny_t2i", "sd_tiny_t2i_192", "wan_tiny_i2v"], "servers": 2, "estimated_s": 28.8},
            {
                "shard": 2,
                "of": 2,
                "scenarios": ["flux_tiny_t2i", "flux_tiny_t2i_8steps", "wan_tiny_t2v", "flux_kontext_tiny_edit"],
                "servers": 3,
                "estimated_s": 31.3,
            },
        ]
    }  # fmt: skip
    assert "7 scenarios, 5 server groups, estimated 60 s; 2 shard(s):" in result.stderr
    assert "shard 2/2: 4 scenarios, 3 server starts, estimated 31 s" in result.stderr


def test_without_a_case_file_each_scenario_is_its_own_group_and_n_is_chosen():
    result = plan("data/perf_baselines/cpu.json", "--target-time", "20", "--min-time", "10")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)["include"]
    assert len(entries) == 4  # ceil(70.7 / 20), within [ceil(70.7 / 2400), floor(70.7 / 10)]
    assert sum(e["servers"] for e in entries) == 7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*BUNDLED, "--shards", "6"], "cannot make 6 shards of 5 server group(s): use 1 to 5 shards"),
        ([*BUNDLED, "--shards", "0"], "argument --shards: expected an integer >= 1, got '0'"),
        ([*BUNDLED, "--shards", "2", "--target-time", "60"], "--shards: give either --shards or --target-time"),
        (
            [*BUNDLED, "--max-time", "-5"],
            "argument --max-time: expected a positive number of seconds, at most 604800 (a week), got '-5'",
        ),
        (["missing.json"], "missing.json: file not found"),
        ([*BUNDLED[:-1], "nosuch"], "unknown launcher 'nosuch'"),
    ],
)
def test_plan_errors(args, message):
    result = plan(*args)
    assert result.returncode == 2 and result.stdout == ""
    last = result.stderr.splitlines()[-1]  # after argparse's usage, for a bad argument
    assert last.startswith("diffperf plan: error: ") and message in last, result.stderr
