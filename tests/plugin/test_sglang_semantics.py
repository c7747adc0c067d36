"""SGLang's judging semantics through the plugin, on the reference server.

``run_perf_check: false`` keeps the e2e and load checks; VRAM is judged only where the platform's
server reports it; an upscaled output is expected at the scaled size. The DenoisingStage is slowed
by an injected delay, so any stage check the run makes fails: a check made where it should not be
cannot hide.
"""

from __future__ import annotations

import pytest

from tests.support.suite import GENEROUS, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

SLOW = "--inject-delay DenoisingStage=300"  # the stage takes >= 300 ms: its 0.001 ms baseline fails when judged
TIGHT_STAGES = {"stages_ms": {"DenoisingStage": 0.001}, "expected_load_ms": 600000.0}


def test_perf_check_off_keeps_e2e_and_load_vram_only_where_reported_and_upscaled_sizes(pytester, suite):
    cases = [
        tiny_case("perf_off", SLOW, run_perf_check=False),
        tiny_case("perf_off_slow_e2e", SLOW, run_perf_check=False, seed=2),
        tiny_case("perf_on", SLOW, seed=3),
        # SGLang before 0.5.21 (semantics row perf_check_off, missing_scenario): nothing judged, no baseline needed
        tiny_case("perf_off_0_5_20", SLOW, run_perf_check=False, judged_without_perf_check="nothing", seed=4),
        tiny_case("perf_off_0_5_20_unlisted", SLOW, run_perf_check=False, judged_without_perf_check="nothing"),
        tiny_case("upscaled", SLOW, sglang_request_extra={"enable_upscaling": True, "upscaling_scale": 2}),
        # the default memory mode: like SGLang off CUDA, the server writes no memory snapshots
        tiny_case("vram", frameworks={"sglang": {"serve_args": "--warmup-mode server"}}),
    ]
    scenarios = {
        "perf_off": {**GENEROUS, **TIGHT_STAGES},
        "perf_off_slow_e2e": {**GENEROUS, **TIGHT_STAGES, "expected_e2e_ms": 1.0, "expected_load_ms": 1.0},
        "perf_on": {**GENEROUS, **TIGHT_STAGES},
        "perf_off_0_5_20": {**GENEROUS, **TIGHT_STAGES, "expected_e2e_ms": 1.0, "expected_load_ms": 1.0},
        "upscaled": GENEROUS,
        "vram": {**GENEROUS, "load_peak_vram_mb": 1.0, "runtime_peak_vram_mb": 1.0, "warmup_peak_vram_mb": 1.0},
    }
    result = pytester.runpytest(*suite(cases, scenarios))
    result.assert_outcomes(passed=4, failed=3)
    assert not refservers()
    by_id = {s["scenario"]: s for s in results(pytester)["scenarios"]}

    def checks(scenario: str) -> dict[str, str]:
        return {c["name"]: c["verdict"] for c in by_id[scenario]["checks"]}

    # run_perf_check false: e2e and load judged (SGLang's test_server_common.py:470-472), nothing else
    assert (by_id["perf_off"]["verdict"], checks("perf_off")) == ("pass", {"e2e": "pass", "load": "pass"})
    assert checks("perf_off_slow_e2e") == {"e2e": "fail", "load": "fail"}
    assert by_id["perf_off_slow_e2e"]["message"].startswith("PERFORMANCE: 2 check(s) failed")
    assert (by_id["perf_off_0_5_20"]["verdict"], checks("perf_off_0_5_20")) == ("unjudged", {})
    assert by_id["perf_off_0_5_20_unlisted"]["verdict"] == "unjudged"  # no baseline scenario, and no failure
    # the same baseline judged in full: the stage fails
    assert by_id["perf_on"]["verdict"] == "fail"
    assert checks("perf_on")["stage[DenoisingStage]"] == "fail"
    # on cpu no VRAM figures are judged (the baseline has them; the server writes none)
    assert by_id["vram"]["verdict"] == "pass"
    assert not {c["kind"] for c in by_id["vram"]["checks"]} & {"vram"}
    # an upscaled output is expected at twice the asked size: the reference server does not upscale
    assert by_id["upscaled"]["verdict"] == "error"
    result.stdout.fnmatch_lines(
        ["*_ diffperf scenario upscaled _*", "server http://*: image is 64x64, expected 128x128"]
    )


def test_a_case_is_judged_with_its_release_s_step_allowances(pytester, suite):
    """Semantics row step_allowances: the first step of a 0.5.12 case is allowed rel 0.4, of a 0.5.13+ case 4.0."""
    cases = [tiny_case("allow_0_5_13"), tiny_case("allow_0_5_12", limit_allowances="0.5.12", seed=2)]
    first_step = {**GENEROUS, "denoise_step_ms": {"0": 60000.0}}
    result = pytester.runpytest(*suite(cases, {"allow_0_5_13": first_step, "allow_0_5_12": first_step}))
    result.assert_outcomes(passed=2)
    by_id = {s["scenario"]: {c["name"]: c for c in s["checks"]} for s in results(pytester)["scenarios"]}
    assert by_id["allow_0_5_13"]["step[0]"]["limit"] == 300000.0  # 60000 * (1 + 4.0)
    assert by_id["allow_0_5_12"]["step[0]"]["limit"] == 84000.0  # 60000 * (1 + 0.4)
