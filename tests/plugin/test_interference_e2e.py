"""Interference end to end: a static fail measured on a busy machine is inconclusive (machine busy) while the load
explains it, and fails beyond that; quiet, it fails."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.support.burners import outside_burners
from tests.support.suite import results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

TIGHT = {"e2e": 0.1, "denoise_stage": 0.1, "non_denoise_stage": 0.5, "denoise_step": 0.5, "denoise_agg": 0.1}
TOLERANCES = {"pr_test": TIGHT, "long_term": TIGHT}
SERVING = re.compile(r"\[refserver\] serving \S+ at \S+ \(pid (\d+),")  # the process serving the port
TICKS_MS = 20  # CPU times are counted in clock ticks of 10 ms: one at each end


@pytest.fixture
def measured(pytester, suite):
    """A case of 3 requests and its baseline, measured here (no burners)."""
    case = tiny_case("tiny", perf_repeat_requests=3, perf_warmup_requests=1)
    pytester.runpytest(*suite([case], {})).assert_outcomes(failed=1)
    message = results(pytester)["scenarios"][0]["message"]
    at = message.index('"tiny": ')
    return json.loads("{" + message[at:].strip() + "}")["tiny"]


def slowed_by(suite, baseline: dict, times: float) -> list[str]:
    """The run's arguments: the case slowed ``times`` over its baseline (its e2e slept ``times - 1`` more)."""
    delay = round((times - 1) * baseline["expected_e2e_ms"], 1)
    slow = tiny_case("tiny", f"--inject-delay DenoisingStage={delay}", perf_repeat_requests=3, perf_warmup_requests=1)
    return suite([slow], {"tiny": baseline}, TOLERANCES)


@pytest.fixture
def slowed(suite, measured):
    """The case slowed 3x: what the quiet run below fails."""
    return slowed_by(suite, measured, 3)


def test_no_change_beside_four_cpu_burners_never_fails_and_a_fail_the_wait_explains_is_machine_busy(
    pytester, suite, measured, tmp_path
):
    """No change at all: beside four burners every request waits for a CPU, and whatever the waits made slower than
    the baseline (measured without them, on a machine others may load as much) the wait explains."""
    with outside_burners(4, tmp_path) as burners:
        result = pytester.runpytest(
            *slowed_by(suite, measured, 1), "--diffperf-busy-share=10%", "--diffperf-quiet-wait=3", "-rA"
        )
    assert result.ret == 0  # a pass, or inconclusive (--diffperf-inconclusive report): never a fail
    scenario = results(pytester)["scenarios"][0]
    assert scenario["verdict"] in ("pass", "inconclusive"), scenario["message"]
    interference = scenario["interference"]
    assert interference["threshold"] == 0.1
    assert all(w["busy"] and w["cpu_share"] > 0.1 for w in interference["windows"])
    named = {p["pid"] for w in interference["windows"] for p in w["top"]}
    assert named  # the outside processes that took the most are named (the burners, or busier neighbours)
    # this run (in process here) and its server, forked from the suite's fork server where it runs: ours
    serving = SERVING.findall(Path(scenario["server"]["log"]).read_text())
    assert serving and not named & {os.getpid(), scenario["server"]["pid"], *map(int, serving)}
    rows = results(pytester)["rows"]
    assert rows and all(r["wait_ms"] > 0 for r in rows)  # four burners on this machine's CPUs: every request waits
    out = result.stdout.str()
    assert "diffperf: interference: other processes used up to " in out
    if interference["effect"] == "inconclusive":  # a check failed on busy attempts alone, within the bound
        first = scenario["message"].splitlines()[0]
        assert first.startswith("PERFORMANCE: inconclusive (machine busy: other processes used ")
        assert "the run's 3 s of waiting" in first or "waited for quiet" in first
        assert "it would have failed:" in scenario["message"] and "next: run it A/B" in scenario["message"]
        assert "1 fail(s) made inconclusive" in out
    assert burners
    provenance = json.loads((pytester.path / "results.json").read_text())["provenance"]
    assert provenance["interference"].startswith("other processes used up to ")


def test_a_slowdown_beyond_what_two_cpu_burners_explain_fails_on_the_busy_machine(pytester, suite, measured, tmp_path):
    """8x: a sleep the load cannot stretch, far beyond any contention two burners cause on this machine."""
    with outside_burners(2, tmp_path):
        result = pytester.runpytest(
            *slowed_by(suite, measured, 8), "--diffperf-busy-share=10%", "--diffperf-quiet-wait=3"
        )
    result.assert_outcomes(failed=1)
    scenario = results(pytester)["scenarios"][0]
    assert scenario["verdict"] == "fail", scenario["message"]
    first = scenario["message"].splitlines()[0]
    assert first.startswith("PERFORMANCE: ") and "; fails even allowing x" in first
    assert first.endswith(" for the busy machine")
    assert "measured on a busy machine (other processes used " in scenario["message"]
    assert "the most the load explains" in scenario["message"]
    assert scenario["interference"]["effect"] == "kept"  # not waited for, not made inconclusive
    assert scenario["interference"]["waited_s"] == 0
    rows = results(pytester)["rows"]
    assert len(rows) == 3 * scenario["noise"]["attempts"]
    cpus = os.cpu_count() or 1
    assert all(0 < r["cpu_ms"] <= cpus * r["client_ms"] + TICKS_MS for r in rows)  # all its CPUs at most


def test_a_baseline_recorded_busy_keeps_its_wait_and_a_slowdown_beyond_the_rest_fails(pytester, suite, tmp_path):
    """The baseline recorded beside two burners (--accept-busy) stores its request's server CPU time and wait; 8x
    beside the same burners fails, e2e allowed only the run's wait beyond the baseline's own (named)."""
    case = tiny_case("tiny", perf_repeat_requests=3, perf_warmup_requests=1)
    with outside_burners(2, tmp_path):
        pytester.runpytest(*suite([case], {}), "--regen-baselines", "--accept-busy").assert_outcomes(passed=1)
        baseline = json.loads((pytester.path / "baselines.json").read_text())["scenarios"]["tiny"]
        own = baseline["request_cpu"]
        assert own["cpu_ms"] > 0 and own["wait_ms"] > 0  # two burners on this machine's CPUs: its request waited
        result = pytester.runpytest(
            *slowed_by(suite, baseline, 8), "--diffperf-busy-share=10%", "--diffperf-quiet-wait=3"
        )
    result.assert_outcomes(failed=1)
    scenario = results(pytester)["scenarios"][0]
    assert scenario["verdict"] == "fail", scenario["message"]
    assert "; fails even allowing x" in scenario["message"].splitlines()[0]
    # the baseline's wait netted from e2e alone, where it fits in the baseline's e2e (else threads side by side)
    last = scenario["message"].splitlines()[-1]
    netted = ": e2e " in last and own["wait_ms"] < baseline["expected_e2e_ms"]
    assert (f"beyond the baseline's own {own['wait_ms']:g} ms of waiting for a CPU" in last) == netted, last


def test_a_fail_measured_quiet_still_fails(pytester, slowed):
    """Quiet by the threshold (95 %: no neighbour takes that much beside a running server on 2 cores)."""
    result = pytester.runpytest(*slowed, "--diffperf-busy-share=95%")
    result.assert_outcomes(failed=1)
    scenario = results(pytester)["scenarios"][0]
    assert scenario["verdict"] == "fail"
    assert scenario["interference"]["effect"] == "none"
    assert scenario["interference"]["threshold"] == 0.95
    assert len(scenario["interference"]["windows"]) == scenario["noise"]["attempts"] == 3


def test_regeneration_beside_two_cpu_burners_is_refused_unless_accept_busy(pytester, suite, tmp_path):
    """Issue 39: a baseline measured busy would hide slowdowns; --accept-busy writes it and names it in the metadata."""
    args = [*suite([tiny_case("tiny")], {}), "--regen-baselines", "--diffperf-busy-share=10%"]
    before = (pytester.path / "baselines.json").read_text()
    with outside_burners(2, tmp_path):
        refused = pytester.runpytest(*args)
        unchanged = (pytester.path / "baselines.json").read_text()
        accepted = pytester.runpytest(*args, "--accept-busy")
    refused.assert_outcomes(failed=1)
    out = refused.stdout.str()
    assert "tiny: not regenerated, measured busy (other processes used " in out
    assert "figures of a busy machine are no baseline (they hide slowdowns); record it when the machine is quiet" in out
    assert unchanged == before
    accepted.assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "baselines.json").read_text())
    assert "tiny" in doc["scenarios"]
    assert doc["metadata"]["measured_busy"].startswith(
        "accepted with --accept-busy though measured busy: tiny measured busy (other processes used "
    )
