"""The README's A/B job on the bundled suite, as the README writes it."""

from __future__ import annotations

import pytest

from tests.support.bundled import pytest_at_root, scenarios
from tests.support.paths import REPO

pytestmark = pytest.mark.server  # starts server processes


def test_the_readmes_a_b_example_names_the_stage(tmp_path):
    """The README's second job (on one scenario): base and candidate side by side, the candidate slowed."""
    readme = (REPO / "README.md").read_text()
    command = next(line for line in readme.splitlines() if "--diffperf-base=current" in line)
    assert command.startswith("pytest --diffperf=pr_test --diffperf-base=current --diffperf-candidate=")
    results = tmp_path / "results.json"
    proc = pytest_at_root(
        "--diffperf=pr_test",
        "--diffperf-base=current",
        "--diffperf-candidate=args=--inject-delay DenoisingStage=300",
        f"--diffperf-json={results}",
        "-k",
        "flux_kontext_tiny_edit",
    )
    assert "args=--inject-delay DenoisingStage=300" in command
    assert proc.returncode == 1, proc.stdout[-5000:]
    s = scenarios(results)["flux_kontext_tiny_edit"]
    assert s["ab"]["verdict"] == "regressed"
    assert s["ab"]["attribution"]["named"][0] == "DenoisingStage"
    # the headline leads with e2e, or, where a busy machine (noise priors x4) leaves e2e undecided, with the stage
    heads = [line for line in proc.stdout.splitlines() if "regressed: " in line]
    assert any("regressed: e2e +" in h or "regressed: DenoisingStage +" in h for h in heads), heads
    assert "DenoisingStage +" in proc.stdout and "explains" in proc.stdout
