"""Regeneration's guardrails: a file's platform against the measured one, the description kept, and each
decision announced before the file is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.regen.guard import check_platforms, file_platform
from pytest_diffperf.regen.policy import RegenSettings
from pytest_diffperf.regen.summary import decision_lines
from pytest_diffperf.regen.writer import regenerate, run_metadata


def test_file_platform_from_its_place_else_the_run(tmp_path: Path):
    assert file_platform(tmp_path / "perf_baselines" / "h100.json", None) == "h100"
    assert file_platform(tmp_path / "ascend" / "perf_baselines_npu.json", "h100") == "npu"
    assert file_platform(tmp_path / "perf_baselines.json", "h100") == "h100"
    assert file_platform(tmp_path / "perf_baselines.json", None) is None


def test_another_platform_is_refused_unless_forced(tmp_path: Path):
    target = tmp_path / "perf_baselines" / "h100.json"
    with pytest.raises(DiffperfError) as info:
        check_platforms([target], "h100", "AMD EPYC", "cpu", force=False)
    assert str(info.value) == (
        f"--regen-baselines: refusing to regenerate: {target} holds h100 figures, and this run measures on "
        "AMD EPYC (cpu); regenerate on h100 hardware, or pass --regen-force to write these figures anyway"
    )
    assert check_platforms([target], "h100", "AMD EPYC", "cpu", force=True) == [
        f"--regen-force: {target} holds h100 figures, and this run measures on AMD EPYC (cpu); writing them anyway"
    ]
    assert check_platforms([tmp_path / "perf_baselines" / "cpu.json"], "cpu", "AMD EPYC", "cpu", force=False) == []
    with pytest.raises(DiffperfError, match="measures on Mystery X, a device of no known platform"):
        check_platforms([target], "h100", "Mystery X", None, force=False)


ENTRY = {
    "stages_ms": {"DenoisingStage": 900.0},
    "denoise_step_ms": {"0": 100.0},
    "expected_e2e_ms": 1000.0,
    "expected_avg_denoise_ms": 100.0,
    "expected_median_denoise_ms": 100.0,
    "estimated_full_test_time_s": 10,
}


def test_the_change_is_announced_before_the_write_and_the_description_kept(tmp_path: Path):
    path = tmp_path / "perf_baselines.json"
    doc = {"metadata": {"description": "H100 figures, measured by the team"}, "scenarios": {"a": ENTRY}}
    path.write_text(json.dumps(doc, indent=4))
    measured = dict(ENTRY, expected_e2e_ms=40.0, stages_ms={"DenoisingStage": 30.0})
    seen: list[tuple[list[str], str]] = []

    def announce(decision):
        seen.append((decision_lines("a", str(path), decision, dry_run=False), path.read_text()))

    settings = RegenSettings("replace", 0.05, False)
    metadata = run_metadata("replace", "h100", tmp_path, measured_on="AMD EPYC (cpu)")
    regenerate(path, "a", measured, settings, metadata, announce)
    ((lines, text_then),) = seen
    assert json.loads(text_then) == doc  # announced while the file still held the old figures
    assert lines[0] == f"diffperf: regen a -> {path}: replaced (policy replace); 2 value(s) lowered, 0 raised, 0 new"
    assert "expected_e2e_ms 1000.00 -> 40.00 (-96.0%)" in lines[1]
    assert "  warning: expected_e2e_ms moves by -96.0% (more than 50%): is this the right hardware?" in lines
    written = json.loads(path.read_text())
    assert written["scenarios"]["a"]["expected_e2e_ms"] == 40.0
    assert written["metadata"]["description"] == "H100 figures, measured by the team"
    assert "measured on AMD EPYC (cpu)" in written["metadata"]["regenerated_by"]
