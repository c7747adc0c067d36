"""The plugin end to end: pytester runs of real reference-server processes over HTTP."""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import threading

import psutil
import pytest

from pytest_diffperf.suite.items import UnguardedWarning
from tests.support.signals import python_with_default_signals
from tests.support.suite import GENEROUS, interrupt_when_serving, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes


def snippet_from(message: str, scenario_id: str) -> dict:
    """The scenario JSON in a missing-baseline message (SGLang's ``"<id>": {...}`` form)."""
    at = message.index(f'"{scenario_id}": ')
    return json.loads("{" + message[at:].strip() + "}")[scenario_id]


def test_plain_pytest_is_unaffected(pytester, suite):
    suite([tiny_case("a")], {"a": GENEROUS})
    pytester.makeini(
        "[pytest]\ndiffperf_baselines = baselines.json\ndiffperf_cases = cases.json\ndiffperf_server = reference\n"
    )
    pytester.makepyfile("def test_ok():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "diffperf:" not in result.stdout.str() and "diffperf summary" not in result.stdout.str()
    assert not refservers()


def test_scenario_passes_with_header_summary_json_rows_junit_and_step_summary(pytester, suite, monkeypatch):
    unguarded = dict(GENEROUS, expected_e2e_ms=0.0)
    args = suite(
        [tiny_case("tiny_a", perf_repeat_requests=2), tiny_case("tiny_zero", seed=5)],
        {"tiny_a": GENEROUS, "tiny_zero": unguarded},
    )
    step_summary = pytester.path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    # the outer run turns warnings into errors; the inner one must show the plugin's warning as a warning
    result = pytester.runpytest(
        *args, "-v", "--junitxml=junit.xml", "-W", f"always::{UnguardedWarning.__module__}.UnguardedWarning"
    )
    result.assert_outcomes(passed=2, warnings=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "diffperf: profile=pr_test",
            "diffperf: preset=sglang",
            "diffperf: hardware=cpu",
            "diffperf: baselines=*baselines.json*",
            "diffperf: launcher=reference",
            "diffperf: inconclusive=report",
            "diffperf: lint: 1 warning(s) in the baseline files (see: diffperf lint *baselines.json --hardware cpu)",
            "*baselines.json::tiny_a PASSED*",
            "*baselines.json::tiny_zero PASSED*",
            "*UnguardedWarning: tiny_zero: *",
            "*diffperf summary*",
            "scenario*outcome*e2e ms*expected*Δ*limiting check*reason",
            "tiny_a *pass *600000.00*",
            "tiny_zero *unguarded *0.00 *e2e: baseline expected_e2e_ms is 0, so it is not guarded",
        ]
    )
    assert "Traceback" not in out
    doc = results(pytester)
    assert doc["inconclusive"] == "report"  # diffperf merge fails the run's inconclusive scenarios by it
    assert [(r["scenario"], r["request"]) for r in doc["rows"]] == [("tiny_a", 0), ("tiny_a", 1), ("tiny_zero", 0)]
    row = doc["rows"][0]
    assert row["e2e_ms"] > 0 and row["load_ms"] > 0 and row["avg_step_ms"] > 0
    assert set(row["stages_ms"]) >= {"TextEncodingStage", "DenoisingStage", "DecodingStage"}
    assert set(row["sampled_steps_ms"]) == {"0", "2", "3"}  # fractions 0, .5, 1 of 4 steps
    assert row["memory_mb"]["runtime_peak"]["peak_host_anon_mb"] > 0
    assert [s["verdict"] for s in doc["scenarios"]] == ["pass", "unguarded"]
    assert {c["name"] for c in doc["scenarios"][0]["checks"]} >= {"e2e", "avg_denoise", "median_denoise"}
    junit = (pytester.path / "junit.xml").read_text()
    assert '<property name="diffperf_verdict[tiny_a]" value="pass"' in junit
    assert '<property name="diffperf_outcome[tiny_zero]" value="unguarded"' in junit
    judged = statistics.median(r["e2e_ms"] for r in doc["rows"] if r["scenario"] == "tiny_a")  # of both requests
    assert f'<property name="diffperf_e2e_ms[tiny_a]" value="{judged}"' in junit
    assert doc["scenarios"][0]["measured"]["e2e_ms"] == judged
    summary = step_summary.read_text()
    assert "| | scenario | outcome | e2e ms | expected | Δ | limiting check |" in summary
    assert "| ⚠️ | tiny_zero | unguarded |" in summary and "**2 scenarios: 1 pass, 1 unguarded**" in summary
    assert not refservers()


def test_missing_baseline_prints_ready_snippet_and_missing_case_names_the_file(pytester, suite):
    args = suite([tiny_case("new_case")], {"orphan": GENEROUS})
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "scenario 'orphan' has a baseline in" in out and "no case definition" in out
    assert 'add this baseline in the "scenarios" section of' in out
    scenario = snippet_from(results(pytester)["scenarios"][1]["message"], "new_case")
    assert set(scenario) >= {"stages_ms", "denoise_step_ms", "expected_e2e_ms", "expected_avg_denoise_ms"}
    assert list(scenario["denoise_step_ms"]) == ["0", "1", "2", "3"]
    assert all(round(v, 2) == v for v in scenario["denoise_step_ms"].values())


def test_k_selects_by_scenario_name_and_shared_group_starts_one_server(pytester, suite):
    cases = [tiny_case("alpha_one"), tiny_case("alpha_two", seed=2), tiny_case("beta.1-x", num_inference_steps=3)]
    args = suite(cases, {c["id"]: GENEROUS for c in cases})
    result = pytester.runpytest(*args, "-k", "alpha", "-v")
    result.assert_outcomes(passed=2, deselected=1)
    doc = results(pytester)
    assert len(doc["servers"]) == 1  # one launch for the two cases of one group
    assert {s["server"]["pid"] for s in doc["scenarios"]} == {doc["servers"][0]["pid"]}
    collected = pytester.runpytest(*args, "--collect-only", "-q")
    collected.stdout.fnmatch_lines(
        ["baselines.json::alpha_one", "baselines.json::alpha_two", "baselines.json::beta.1-x"]
    )


def test_injected_denoising_delay_fails_exactly_the_checks_it_should(pytester, suite):
    # Measure the unmodified server to get a baseline of this machine, as a user would.
    args = suite([tiny_case("tiny")], {})
    pytester.runpytest(*args).assert_outcomes(failed=1)
    scenario = snippet_from(results(pytester)["scenarios"][0]["message"], "tiny")
    # Wide limits everywhere (e2e and the denoising stage 4x) but far below the delay, 5x the measured
    # e2e: noise on a busy machine cannot fail a check, and a faster run cannot pass one.
    wide = {"e2e": 3.0, "denoise_stage": 3.0, "non_denoise_stage": 20.0, "denoise_step": 20.0, "denoise_agg": 20.0}
    tolerances = {"pr_test": wide, "long_term": wide}
    delay = round(5 * scenario["expected_e2e_ms"])
    args = suite([tiny_case("tiny", f"--inject-delay DenoisingStage={delay}")], {"tiny": scenario}, tolerances)
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=1)
    checks = results(pytester)["scenarios"][0]["checks"]
    failed = {c["name"] for c in checks if c["verdict"] != "pass"}
    assert failed == {"e2e", "stage[DenoisingStage]"}, checks
    out = result.stdout.str()
    assert "DenoisingStage" in out and "e2e" in out


def test_ctrl_c_stops_every_server(pytester, suite):
    args = suite([tiny_case("slow", "--inject-hang-on-request 1", timeout_s=300)], {"slow": GENEROUS})
    command = python_with_default_signals("-m", "pytest", *args)
    proc = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.DEVNULL)
    interrupt_when_serving(
        proc, lambda run: [p for p in run if "refserver" in " ".join(p.cmdline())], signal.SIGINT, 120
    )


@pytest.mark.parametrize("xdist", [(), ("-n", "1")], ids=["plain", "xdist"])
def test_sigterm_ends_the_run_as_ctrl_c_does_and_the_finished_scenarios_are_written(pytester, suite, xdist):
    """As a CI system cancels a job: the run stops at the running test, its server is stopped, and the
    summary, results file and JUnit XML hold the scenario that finished (under xdist: SIGTERM to the controller)."""
    cases = [tiny_case("quick"), tiny_case("slow", "--inject-hang-on-request 1", timeout_s=300)]
    args = suite(cases, {"quick": GENEROUS, "slow": GENEROUS})
    command = python_with_default_signals("-m", "pytest", *args, "-v", "--junitxml=junit.xml", *xdist)
    proc = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True)
    reader.start()

    def slow_server(run: list[psutil.Process]) -> list[psutil.Process]:  # once the quick scenario passed
        if not any("::quick" in line and "PASSED" in line for line in list(lines)):
            return []
        return [p for p in run if "--inject-hang-on-request" in " ".join(p.cmdline())]

    try:
        interrupt_when_serving(proc, slow_server, signal.SIGTERM, 240)  # interrupted, as by Ctrl-C
    finally:
        reader.join(timeout=10)
        proc.stdout.close()
    out = "".join(lines)
    assert "KeyboardInterrupt: SIGTERM" in out and "diffperf summary" in out, out
    assert [r["scenario"] for r in results(pytester)["scenarios"]] == ["quick"]
    junit = (pytester.path / "junit.xml").read_text()
    assert 'name="quick"' in junit and 'name="slow"' not in junit
    assert not refservers()


@pytest.mark.parametrize(
    ("flags", "outcome", "expected"),
    [
        ("--inject-fail-startup", "errors", "exited with code"),
        ("--inject-crash-on-request 1", "failed", "exited with code"),
        ("--inject-hang-on-request 1", "failed", "did not answer request 1 within 3 s"),
    ],
)
def test_broken_server_fails_its_test_with_log_tail_and_next_group_runs(pytester, suite, flags, outcome, expected):
    cases = [tiny_case("broken", flags, timeout_s=3), tiny_case("healthy", num_inference_steps=3)]
    args = suite(cases, {"broken": GENEROUS, "healthy": GENEROUS})
    result = pytester.runpytest(*args, "--diffperf-startup-timeout=120")
    result.assert_outcomes(passed=1, **{outcome: 1})
    out = result.stdout.str()
    assert expected in out
    assert re.search(r"server log \S+/server\.log \(last \d+ line\(s\)", out), out
    assert "Traceback" not in out
    assert not refservers()
