"""Interference in the results: the record of each window, a busy fail made inconclusive, the run's line."""

from __future__ import annotations

import pytest

from pytest_diffperf.judging.interference import (
    ab_interference,
    interference_record,
    machine_busy,
    measured_busy,
    run_line,
)
from pytest_diffperf.results.model import ABRecord, CheckRecord, ScenarioResult
from pytest_diffperf.results.provenance import Provenance
from pytest_diffperf.results.stepsummary import markdown
from pytest_diffperf.serving.deviceusage import DeviceProcess
from pytest_diffperf.serving.interference import BusyPolicy, DeviceHolder, Interference, OutsideProcess

POLICY = BusyPolicy(share=0.25, wait_s=120)
BUSY = Interference(
    wall_s=4.0, cpus=2, outside_cpu_s=4.88, ours_cpu_s=3.0, load_avg=(4.4, 3.1, 2.0),
    top=(OutsideProcess(4321, "python", 3.9), OutsideProcess(99, "stress", 0.8)),
)  # fmt: skip
QUIET = Interference(wall_s=4.0, cpus=2, outside_cpu_s=0.4, ours_cpu_s=3.9, load_avg=(1.2, 1.0, 1.0))


def failed() -> ScenarioResult:
    return ScenarioResult(
        scenario="flux_tiny_t2i",
        verdict="fail",
        message="PERFORMANCE: 1 check(s) failed (1 fresh server(s), 3 requests)",
    )


def test_a_busy_fail_reads_inconclusive_machine_busy_with_the_figures_and_what_it_would_have_said():
    result = failed()
    machine_busy(result, [QUIET, BUSY], POLICY, "not quiet within 120 s")
    assert result.verdict == "inconclusive" and result.outcome == "inconclusive"
    assert result.message.splitlines() == [
        "PERFORMANCE: inconclusive (machine busy: other processes used 61% of 2 CPUs, load average 4.40; "
        "not quiet within 120 s)",
        "  busiest measurement: other processes used 61% of 2 CPUs (4.9 CPU-s in 4.0 s), load average 4.40; "
        "most: pid 4321 python 3.9 CPU-s, pid 99 stress 0.8 CPU-s",
        "  measured on a busy machine (over 25% of its CPUs or a device taken by other processes), "
        "it would have failed:",
        "    PERFORMANCE: 1 check(s) failed (1 fresh server(s), 3 requests)",
        "  next: run it A/B (--diffperf-base=SPEC: both sides share the load), on a quiet runner, or with a longer "
        "--diffperf-quiet-wait; --diffperf-busy-share sets what counts as busy",
    ]


def ab_result(verdict: str, memory: str = "pass") -> ScenarioResult:
    record = ABRecord(
        verdict=verdict, headline=f"{verdict}: e2e +61.3 % [+9.6, +137.4]", base="current", candidate="current",
        process_pairs=2, requests=4, wall_s=27.0, stop="decisive", metrics=[],
    )  # fmt: skip
    peak = CheckRecord(name="peak_host_anon_mb", kind="host_anon", actual=600.0, expected=500.0, limit=550.0,
                       rel=0.1, pad=0.0, verdict=memory)  # fmt: skip
    scenario_verdict = {"regressed": "fail", "unchanged": "pass", "inconclusive": "inconclusive"}[verdict]
    return ScenarioResult(
        scenario="same",
        verdict="fail" if memory == "fail" else scenario_verdict,
        message=f"PERFORMANCE: {record.headline}",
        checks=[peak],
        ab=record,
    )


def test_a_regressed_measured_busy_one_server_at_a_time_is_inconclusive_machine_busy():
    result = ab_result("regressed")
    ab_interference(result, [QUIET, BUSY], POLICY, together=False)
    assert result.verdict == "inconclusive" and result.ab is not None and result.ab.verdict == "regressed"
    lines = result.message.splitlines()
    assert lines[0] == (
        "PERFORMANCE: inconclusive (machine busy: other processes used 61% of 2 CPUs, load average 4.40; "
        "one server at a time, busy on 1 of 2 process pair(s))"
    )
    assert "    PERFORMANCE: regressed: e2e +61.3 % [+9.6, +137.4]" in lines
    assert lines[-1].startswith("  next: run both sides together (--diffperf-ab-servers=together)")
    assert result.interference is not None and result.interference.effect == "inconclusive"
    assert [w.busy for w in result.interference.windows] == [False, True]


@pytest.mark.parametrize(
    ("verdict", "memory", "together", "windows", "effect"),
    [
        ("regressed", "pass", True, [BUSY], "kept"),  # side by side: both sides shared the load
        ("regressed", "pass", False, [QUIET, QUIET], "none"),  # one at a time, quiet: a regression
        ("regressed", "fail", False, [BUSY], "kept"),  # a memory fail does not depend on the load
        ("unchanged", "pass", False, [BUSY], "kept"),  # a pass is kept, as in static mode
        ("inconclusive", "pass", False, [BUSY], "kept"),
    ],
)
def test_an_ab_verdict_is_kept_unless_a_timing_regression_was_measured_busy_one_at_a_time(
    verdict, memory, together, windows, effect
):
    result = ab_result(verdict, memory)
    before = result.model_copy(deep=True)
    ab_interference(result, windows, POLICY, together=together)
    assert (result.verdict, result.message) == (before.verdict, before.message)
    assert result.interference is not None and result.interference.effect == effect
    assert len(result.interference.windows) == len(windows)


def test_the_record_keeps_every_window_and_survives_the_results_file():
    held = DeviceHolder("0", DeviceProcess(77, "python3", 20480.0), 81559.0)
    device = Interference(2.0, 8, 0.2, 1.0, (0.5, 0.5, 0.5), holders=(held,))
    record = interference_record([QUIET, BUSY, device], POLICY, "inconclusive", 120.04)
    assert [w.busy for w in record.windows] == [False, True, True]  # the device: 20480 of 81559 MiB, over 25 %
    assert record.windows[2].device_share == 0.251
    assert record.windows[1].cpu_share == 0.61 and record.windows[1].top[0].pid == 4321
    assert record.waited_s == 120.0 and record.threshold == 0.25
    result = failed()
    result.interference = record
    again = ScenarioResult.model_validate_json(result.model_dump_json())
    assert again.interference == record
    assert again.document()["interference"]["windows"][2]["devices"][0] == {
        "device": "0", "pid": 77, "name": "python3", "memory_mib": 20480.0, "memory_total_mib": 81559.0,
    }  # fmt: skip
    assert interference_record([QUIET], POLICY).effect == "none"
    assert interference_record([BUSY], POLICY).effect == "kept"  # an A/B run, or a pass: reported, kept


def test_the_runs_line_names_the_busiest_scenario_and_what_busy_did():
    a, b, c = failed(), failed(), failed()
    b.scenario, c.scenario = "sd_tiny_t2i", "wan_tiny_t2v"
    a.interference = interference_record([BUSY], POLICY, "inconclusive", 120)
    b.interference = interference_record([BUSY, QUIET], POLICY, "remeasured", 8)
    c.interference = interference_record([QUIET], POLICY)
    line = run_line([a, b, c, ScenarioResult(scenario="skipped", verdict="skipped")])
    assert line == (
        "other processes used up to 61% of 2 CPUs (flux_tiny_t2i), load average up to 4.40; 2 of 3 scenario(s) "
        "measured busy (over 25%); 128 s waited for quiet in all: 1 fail(s) made inconclusive, 1 fail(s) "
        "re-measured quiet"
    )
    assert run_line([ScenarioResult(scenario="x", verdict="pass")]) is None


def test_measured_busy_names_the_busiest_measurement_for_a_refused_baseline():
    assert measured_busy(interference_record([QUIET], POLICY)) is None and measured_busy(None) is None
    assert measured_busy(interference_record([QUIET, BUSY], POLICY)) == (
        "measured busy (other processes used 61% of 2 CPUs, load average 4.40; 1 of 2 measurement(s) over 25%)"
    )
    assert measured_busy(None, 3) == "measured busy (3 process pair(s) measured while other processes took the machine)"


def test_provenance_carries_the_runs_interference_into_the_step_summary():
    result = failed()
    result.interference = interference_record([BUSY], POLICY, "inconclusive")
    provenance = Provenance(timestamp="2026-12-02T15:00:00+00:00", interference=run_line([result]))
    assert ("interference", provenance.interference) in provenance.pairs()
    assert "other processes used up to 61% of 2 CPUs (flux_tiny_t2i)" in markdown([result], {}, provenance)
