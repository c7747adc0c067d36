"""`diffperf trend DIR`: a history folder's series per scenario and the steps in them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_diffperf.results import history
from pytest_diffperf.results.model import RESULTS_VERSION, ScenarioResult
from tests.support import resultfiles
from tests.support.cli import diffperf


def run_document(index: int, e2e: dict[str, float]) -> dict:
    scenarios = [ScenarioResult(scenario=s, verdict="pass", measured={"e2e_ms": v}).document() for s, v in e2e.items()]
    stamp = f"2026-05-{index + 1:02d}T12:00:00+00:00"
    return {"version": RESULTS_VERSION, "provenance": {"timestamp": stamp, "commit": f"{index:02d}" + "a" * 38},
            "rows": [], "scenarios": scenarios, "servers": []}  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """12 runs: ``steady`` stays at 1 s with 3 % noise and one odd run, ``slowed`` steps up by 25 % at run 8."""
    rng = np.random.default_rng(7)
    for i in range(12):
        steady = 1000 * (1 + 0.03 * rng.standard_normal()) * (3 if i == 4 else 1)
        slowed = 800 * (1 + 0.03 * rng.standard_normal()) * (1.25 if i >= 7 else 1)
        history.save(tmp_path / "hist", run_document(i, {"steady": steady, "slowed": slowed}))
    return tmp_path / "hist"


def test_trend_flags_the_step_and_not_the_outlier(folder):
    result = diffperf("trend", str(folder))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert (
        lines[0]
        == f"diffperf trend: 12 run(s) in {folder}, from 2026-05-01 12:00 00aaaaa to 2026-05-12 12:00 11aaaaa; e2e_ms"
    )
    rows = {line.split()[0]: line for line in lines[2:]}
    assert rows["steady"].endswith(" -")
    assert " at run 8 (2026-05-08 12:00 07aaaaa, p=" in rows["slowed"] and "+2" in rows["slowed"]


def test_fail_on_step_json_and_one_scenario(folder):
    assert diffperf("trend", str(folder), "--fail-on-step").returncode == 1
    assert diffperf("trend", str(folder), "steady", "--fail-on-step").returncode == 0
    data = json.loads(diffperf("trend", "--json", str(folder), "slowed").stdout)  # options anywhere
    (slowed,) = data
    assert [c["index"] for c in slowed["change_points"]] == [7] and len(slowed["values"]) == 12


def test_series_lists_every_run(folder):
    out = diffperf("trend", str(folder), "slowed", "--series").stdout
    assert out.count("<- step") == 1 and "  8  2026-05-08 12:00 07aaaaa" in out


def test_a_history_of_previous_and_current_version_files(tmp_path):
    old, new = resultfiles.previous(), resultfiles.current()
    new["provenance"] |= {"timestamp": "2026-12-03T15:27:52+00:00", "commit": "f" * 40}
    for doc in (old, new):
        history.save(tmp_path / "hist", doc)
    data = json.loads(diffperf("trend", "--json", str(tmp_path / "hist"), "flux_tiny_t2i").stdout)
    (series,) = data
    e2e = old["scenarios"][0]["measured"]["e2e_ms"]
    assert series["values"] == [e2e, e2e] and series["outcomes"] == ["fail", "fail"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing"], "diffperf trend: error: {d}/missing: folder not found"),
        (["empty"], "diffperf trend: error: {d}/empty: no results file (*.json) in the folder"),
        (["hist", "nosuch"], "diffperf trend: error: {d}/hist: no scenario nosuch in the history"),
        (["hist", "--metric", "speed"], "diffperf trend: error: --metric: unknown metric 'speed'; expected one of: "),
    ],
)
def test_user_errors(folder, args, message):
    (folder.parent / "empty").mkdir()
    args = [str(folder.parent / args[0]), *args[1:]]
    result = diffperf("trend", *args)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(message.format(d=folder.parent)), result.stderr
