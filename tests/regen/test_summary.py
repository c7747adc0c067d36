"""The regeneration summary, the dry-run diff, target files and the run's metadata."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from pytest_diffperf._util.atomicfile import dumps_json
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.perf.baselines import load_baselines
from pytest_diffperf.regen.policy import RegenSettings, decide
from pytest_diffperf.regen.summary import summary_lines
from pytest_diffperf.regen.writer import check_writable, diff, run_metadata, target_file

MINIMAL = {"stages_ms": {}, "denoise_step_ms": {}, "expected_e2e_ms": 1.0, "expected_avg_denoise_ms": 0.0,
           "expected_median_denoise_ms": 0.0}  # fmt: skip


def record(scenario: str, policy: str, existing: dict | None, measured: dict) -> dict:
    d = decide(policy, existing, measured)
    return {"scenario": scenario, "file": "b.json", "action": d.action, "reason": d.reason, "entry": d.entry,
            "changes": d.changes(), "written": d.writes}  # fmt: skip


def test_summary_lists_actions_field_counts_and_largest_changes():
    old = {"expected_e2e_ms": 100.0, "denoise_step_ms": {"0": 10.0, "1": 10.0}, "stages_ms": {"A": 0.02}}
    records = [
        record("slower", "replace", old, {"expected_e2e_ms": 150.0, "denoise_step_ms": {"0": 12.5, "1": 9.5}}),
        record("faster", "replace", old, {"expected_e2e_ms": 80.0, "stages_ms": {"A": 0.03}}),
        record("same", "improve", old, {"expected_e2e_ms": 99.0}),
        record("new", "replace", None, {"expected_e2e_ms": 1.0}),
    ]
    lines = summary_lines(records, RegenSettings("replace", 0.05, False))
    assert lines[0] == "policy replace: 1 added, 2 replaced, 1 kept (written: b.json)"
    text = "\n".join(lines)
    assert "same      kept      e2e 100.00 -> 99.00 ms (-1.0%), improve needs at least -5.0%" in text
    assert "new       added     no baseline yet" in text
    assert "denoise_step_ms.*        1       1" in text
    assert "expected_e2e_ms          1       1" in text
    assert "stages_ms.A              0       1" in text
    largest = lines[lines.index("largest relative changes:") + 1 :]
    assert [row.split()[:2] for row in largest] == [
        ["scenario", "field"],
        ["slower", "expected_e2e_ms"],
        ["slower", "denoise_step_ms.0"],
        ["faster", "expected_e2e_ms"],
    ]  # changes under 1 ms (0.02 -> 0.03 ms is +50 %) are not listed
    assert summary_lines([], RegenSettings("replace", 0.05, True)) == ["no scenario was regenerated"]


def test_dry_run_diff_of_an_existing_and_a_new_file(tmp_path: Path):
    path = tmp_path / "b.json"
    path.write_text(dumps_json({"metadata": {"last_updated": "2020-01-01"}, "scenarios": {"s": {"e": 1.0}}}))
    meta = {"last_updated": "2026-01-02"}
    text = diff(path, [("s", {"e": 2.0}), ("t", {"e": 3.0})], meta)
    assert text.startswith(f"--- {path}\n+++ {path}\n")
    for line in ('-        "last_updated": "2020-01-01"', '+        "last_updated": "2026-01-02"',
                 '-            "e": 1.0', '+            "e": 2.0', '+        "t": {'):  # fmt: skip
        assert line + "\n" in text
    new = diff(tmp_path / "new.json", [("t", {"e": 3.0})], meta)
    assert new.startswith(f"--- /dev/null\n+++ {tmp_path / 'new.json'}\n")


def test_targets_follow_the_hardware_selection(tmp_path: Path):
    (tmp_path / "perf_baselines").mkdir()
    doc = {"tolerances": {"pr_test": {"e2e": 1, "denoise_stage": 1, "non_denoise_stage": 1, "denoise_step": 1,
           "denoise_agg": 1}}, "sampling": {"step_fractions": [0.0]}, "scenarios": {}}  # fmt: skip
    (tmp_path / "perf_baselines" / "h100.json").write_text(json.dumps(doc))
    (tmp_path / "ascend").mkdir()
    (tmp_path / "ascend" / "perf_baselines_npu.json").write_text(json.dumps({"scenarios": {"on_npu": MINIMAL}}))
    baselines = load_baselines(tmp_path / "perf_baselines", "h100")
    assert target_file(baselines, "h100", "x") == tmp_path / "perf_baselines" / "h100.json"
    assert target_file(baselines, "npu", "x") == tmp_path / "ascend" / "perf_baselines_npu.json"
    assert target_file(baselines, "musa", "x") == tmp_path / "musa" / "perf_baselines_musa.json"
    assert target_file(baselines, "h100", "on_npu") == tmp_path / "ascend" / "perf_baselines_npu.json"
    assert target_file(baselines, None, "x") == tmp_path / "perf_baselines" / "h100.json"


def test_check_writable(tmp_path: Path):
    check_writable(tmp_path / "a" / "b" / "new.json")  # folders are created on write
    (tmp_path / "file").write_text("")
    with pytest.raises(DiffperfError, match=r"new.json: cannot create the file: .*file is not a folder$"):
        check_writable(tmp_path / "file" / "new.json")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(DiffperfError, match=r"dir\.json: the baseline file is not writable"):
        check_writable(tmp_path / "dir.json")


def test_run_metadata_records_date_hardware_policy_and_commit(tmp_path: Path):
    day = datetime.date(2026, 3, 4)
    meta = run_metadata("tighten", "h100", tmp_path, day, measured_on="cpu (cpu)")
    assert meta == {  # no description: the file's own is kept
        "last_updated": "2026-03-04",
        "regenerated_by": "Regenerated by pytest-diffperf --regen-baselines (policy tighten) for h100, "
        "measured on cpu (cpu), 2026-03-04.",
    }
    assert run_metadata("replace", "h100", tmp_path, day, description="new words")["description"] == "new words"
    where = run_metadata("replace", "cpu", tmp_path, day, device="AMD EPYC", runner="ci-3")
    assert (where["measured_device"], where["measured_runner"]) == ("AMD EPYC", "ci-3")  # the header compares them
    accepted = run_metadata(
        "improve", "h100", tmp_path, day, tool="diffperf accept", source_run="r-1.json", commit="abc"
    )
    assert accepted["regenerated_by"] == (
        "Regenerated by diffperf accept (policy improve) for h100, commit abc, from r-1.json, 2026-03-04."
    )
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert (
        f"for unspecified hardware, commit {head}, 2026-03-04."
        in run_metadata("replace", None, tmp_path, day)["regenerated_by"]
    )
