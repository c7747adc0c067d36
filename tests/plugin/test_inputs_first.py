"""A mistake in a run's files is reported before the plugin imports the output comparison's libraries (torch and
open_clip, seconds), which it does last to check the CLIP model: in a fresh interpreter, as a user's run."""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.support import probe
from tests.support.suite import GENEROUS, TOLERANCES, tiny_case

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("torch", "open_clip", "skimage")),
    reason="the run compares outputs: needs the consistency extra (not in a plugin-only install)",
)


def test_a_malformed_thresholds_file_is_reported_before_open_clip_is_imported(tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "cases.json").write_text(json.dumps({"cases": [tiny_case("tiny")]}))
    baseline = {"tolerances": TOLERANCES, "sampling": {"step_fractions": [0.0]}, "scenarios": {"tiny": GENEROUS}}
    (tmp_path / "baselines.json").write_text(json.dumps(baseline))
    (tmp_path / "thresholds.json").write_text('{"cases": {')
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    outcome, output = probe.run_pytest(
        tmp_path,
        "-p",
        "no:cacheprovider",
        "--diffperf=pr_test",
        "--diffperf-baselines=baselines.json",
        "--diffperf-cases=cases.json",
        "--diffperf-gt-dir=gt",
        "--diffperf-thresholds=thresholds.json",
        watch=("torch", "open_clip"),
    )
    assert outcome == {"code": 4, "loaded": []}, output  # a usage error, and neither library imported
    assert "thresholds.json" in output and "invalid JSON" in output and "Traceback" not in output, output
