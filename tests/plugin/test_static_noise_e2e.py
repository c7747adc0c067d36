"""Static mode judged with the run's noise, end to end: a stored baseline of this machine, then injected delays."""

from __future__ import annotations

import json

import pytest

from tests.support.suite import refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

TIGHT = {"e2e": 0.1, "denoise_stage": 0.1, "non_denoise_stage": 0.5, "denoise_step": 0.5, "denoise_agg": 0.1}
TOLERANCES = {"pr_test": TIGHT, "long_term": TIGHT}


def snippet_from(message: str, scenario_id: str) -> dict:
    at = message.index(f'"{scenario_id}": ')
    return json.loads("{" + message[at:].strip() + "}")[scenario_id]


@pytest.fixture
def measured(pytester, suite):
    """A case of 3 requests and its baseline on this machine, as a user makes one (the missing-baseline snippet)."""
    case = tiny_case("tiny", perf_repeat_requests=3, perf_warmup_requests=1)
    pytester.runpytest(*suite([case], {})).assert_outcomes(failed=1)
    return case, snippet_from(results(pytester)["scenarios"][0]["message"], "tiny")


def test_no_change_is_never_a_failure(pytester, suite, measured):
    case, baseline = measured
    result = pytester.runpytest(*suite([case], {"tiny": baseline}, TOLERANCES), "-v")
    assert result.ret == 0
    scenario = results(pytester)["scenarios"][0]
    assert scenario["verdict"] in ("pass", "inconclusive")
    assert scenario["noise"]["requests"] == 3 * scenario["noise"]["attempts"]
    if scenario["verdict"] == "inconclusive":  # a 10 % limit lies within this machine's run-to-run noise
        result.stdout.fnmatch_lines(["*::tiny INCONCLUSIVE*"])
        assert "the run's noise supports neither a pass nor a fail at these limits" in scenario["message"]
    strict = pytester.runpytest(*suite([case], {"tiny": baseline}, TOLERANCES), "--diffperf-inconclusive=fail")
    verdict = results(pytester)["scenarios"][0]["verdict"]
    assert verdict != "fail"
    assert strict.ret == (1 if verdict == "inconclusive" else 0)


def test_a_tripled_e2e_fails_with_the_denoising_stage_named_after_re_measures(pytester, suite, measured):
    _, baseline = measured
    delay = round(2 * baseline["expected_e2e_ms"], 1)
    slow = tiny_case("tiny", f"--inject-delay DenoisingStage={delay}", perf_repeat_requests=3, perf_warmup_requests=1)
    result = pytester.runpytest(*suite([slow], {"tiny": baseline}, TOLERANCES))
    result.assert_outcomes(failed=1)
    scenario = results(pytester)["scenarios"][0]
    assert scenario["verdict"] == "fail"
    noise = scenario["noise"]
    assert noise["attempts"] == 3 and noise["requests"] == 9  # confirmed on two more fresh servers
    assert noise["attribution"]["named"][0] == "DenoisingStage"
    failing = {c["name"] for c in noise["checks"] if c["verdict"] == "fail"}
    assert "e2e" in failing
    out = result.stdout.str()
    assert "PERFORMANCE: " in out and "(3 fresh server(s), 9 requests)" in out
    assert "against the stored baseline: e2e +" in out and "DenoisingStage +" in out
    assert len({r["request_id"] for r in results(pytester)["rows"]}) == 9
    assert not refservers()


def test_one_request_keeps_sglangs_rule(pytester, suite, measured):
    """A case of one request cannot show its noise: the limit formula alone, as SGLang judges it."""
    case, baseline = measured
    one = dict(case, perf_repeat_requests=1)
    wide = dict.fromkeys(TIGHT, 50.0)  # no figure near a limit on a shared machine: the verdict is the formula's
    pytester.runpytest(*suite([one], {"tiny": baseline}, {"pr_test": wide, "long_term": TIGHT}))
    scenario = results(pytester)["scenarios"][0]
    assert scenario["noise"] is None
    assert scenario["verdict"] == "pass"


def test_calibrated_priors_judge_another_runner_class_with_its_noise(pytester, suite, measured):
    """On h100 the default priors (measured on cpu) do not apply: SGLang's rule, unless a calibration file is given."""
    case, baseline = measured
    args = [a for a in suite([case], {"tiny": baseline}, TOLERANCES) if not a.startswith("--diffperf-hardware")]
    pytester.runpytest(*args, "--diffperf-hardware=h100")
    assert results(pytester)["scenarios"][0]["noise"] is None
    prior = {"baseline": 0.02, "process": 0.02, "within": 0.05}
    (pytester.path / "noise.json").write_text(json.dumps({"static": {"e2e": prior, "denoise": prior, "stage": prior}}))
    pytester.runpytest(*args, "--diffperf-hardware=h100", "--diffperf-noise=noise.json")
    noise = results(pytester)["scenarios"][0]["noise"]
    assert noise is not None and noise["requests"] >= 3
