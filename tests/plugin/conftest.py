"""The ``suite`` fixture: a case file and a baseline file written into a pytester directory."""

from __future__ import annotations

import json

import pytest

from tests.support.suite import TOLERANCES


@pytest.fixture
def suite(pytester):
    """Write ``cases.json`` and ``baselines.json``; returns the diffperf command-line arguments."""

    def write(cases: list[dict], scenarios: dict, tolerances: dict | None = None) -> list[str]:
        (pytester.path / "cases.json").write_text(json.dumps({"cases": cases}, indent=2))
        baseline = {
            "metadata": {"hardware": "cpu"},
            "tolerances": tolerances or TOLERANCES,
            "sampling": {"step_fractions": [0.0, 0.5, 1.0]},
            "scenarios": scenarios,
        }
        (pytester.path / "baselines.json").write_text(json.dumps(baseline, indent=4))
        return [
            "--diffperf=pr_test",
            "--diffperf-baselines=baselines.json",
            "--diffperf-cases=cases.json",
            "--diffperf-server=reference",
            "--diffperf-hardware=cpu",
            "--diffperf-json=results.json",
            "--diffperf-busy-share=off",  # the machine is shared: tests of interference set their own share
            "-p", "no:cacheprovider",
        ]  # fmt: skip

    return write
