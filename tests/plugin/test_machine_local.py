"""The newcomer's two steps to decisive verdicts: record this machine once (a run, then `diffperf accept` of
its results file), then judge: no change does not fail, a 2x slowdown (an injected delay) does. Once each
here (the slowdown at most twice); benchmarks/bench_machine_local.py counts 10 of each (docs/benchmarks.md).
The machine is shared: the interference check is on, so a fail measured while other processes took the CPUs is
`inconclusive (machine busy)`, never a pass of this test's own making."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_diffperf.cli import main
from tests.support.paths import REPO
from tests.support.suite import GENEROUS, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

BUNDLED = json.loads((REPO / "data" / "perf_baselines" / "cpu.json").read_text())


# the bundled flux_tiny_t2i_8steps' shape: e2e about 250 ms here, so SGLang's 20 ms pad does not set the limit (on
# the 64x64 tiny case it makes it +40-70 %, and a 2x slowdown lies within the noise of it: docs/benchmarks.md)
SHAPE: dict[str, Any] = {
    "width": 256,
    "height": 256,
    "num_inference_steps": 8,
    "perf_repeat_requests": 3,
    "perf_warmup_requests": 1,
}


def test_record_with_accept_then_no_change_passes_and_a_slowdown_fails(pytester, suite, monkeypatch):
    case = tiny_case("tiny", **SHAPE)
    args = suite([case], {"tiny": GENEROUS}, BUNDLED["tolerances"])
    judged = [*args, "--diffperf-busy-share=25%", "--diffperf-quiet-wait=0"]  # a busy fail: inconclusive at once
    first = pytester.runpytest(*judged)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(
        ["diffperf: note: *baselines.json was measured on a machine it does not name, this run measures on *: "
         "timings of another machine; for decisive verdicts record this one once (pytest --regen-baselines "
         "--diffperf-baselines=FILE, or diffperf accept of a run's --diffperf-json), then judge against it"]
    )  # fmt: skip
    monkeypatch.chdir(pytester.path)
    recorded_busy = any(w["busy"] for w in results(pytester)["scenarios"][0]["interference"]["windows"])
    if recorded_busy:  # a shared machine: accept refuses a busy measurement (issue 39) unless told to take it
        assert main(["accept", "results.json", "--baselines=baselines.json"]) == 2
    busy_ok = ["--accept-busy"] if recorded_busy else []
    assert main(["accept", "results.json", "--baselines=baselines.json", *busy_ok]) == 0
    recorded = json.loads((pytester.path / "baselines.json").read_text())
    device = results(pytester)["provenance"]["device"]
    assert recorded["metadata"]["measured_device"] == device
    assert ("measured_busy" in recorded["metadata"]) == recorded_busy

    same = pytester.runpytest(*judged)
    assert "baselines.json was measured on" not in same.stdout.str()  # this machine's now
    assert same.ret == 0 and results(pytester)["scenarios"][0]["verdict"] in ("pass", "inconclusive")

    # e2e about 2x: the delay is the recorded e2e, inside the denoising stage
    delay = round(recorded["scenarios"]["tiny"]["expected_e2e_ms"], 1)
    slow = tiny_case("tiny", f"--inject-delay DenoisingStage={delay}", **SHAPE)
    (pytester.path / "cases.json").write_text(json.dumps({"cases": [slow]}))
    for _ in range(2):  # a 2x slowdown fails 97.6-100 % of scenarios (docs/benchmarks.md): twice at most
        pytester.runpytest(*judged)
        scenario = results(pytester)["scenarios"][0]
        if scenario["verdict"] == "fail" or busy(scenario):
            break
    if recorded_busy:  # a baseline recorded while others took the CPUs: 2x of it may be within a quiet run's noise
        assert scenario["verdict"] != "pass", scenario["message"]
    else:
        assert scenario["verdict"] == "fail" or busy(scenario), scenario["message"]
    assert not refservers()


def busy(scenario: dict) -> bool:
    """Whether a fail was made inconclusive because other processes took the machine."""
    interference = scenario.get("interference") or {}
    return scenario["verdict"] == "inconclusive" and interference.get("effect") == "inconclusive"
