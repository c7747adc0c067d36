"""The README's main job: the bundled suite against the reference server, with both profiles."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.server  # starts server processes

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("profile", ["pr_test", "long_term"])
def test_bundled_suite_passes(profile, tmp_path):
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"--diffperf={profile}",
            f"--diffperf-json={results}",
            "-p",
            "no:cacheprovider",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert "7 passed" in proc.stdout
    doc = json.loads(results.read_text())
    assert [s["verdict"] for s in doc["scenarios"]] == ["pass"] * 7
    assert len(doc["servers"]) == 3  # two pairs of scenarios share a server
