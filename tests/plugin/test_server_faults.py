"""A server that hung is replaced before its group's next test; the results file names every server that failed."""

from __future__ import annotations

import pytest

from tests.support.suite import GENEROUS, refservers, results, tiny_case

pytestmark = pytest.mark.server


def test_hung_server_is_replaced_before_the_groups_next_test(pytester, suite):
    # One group (same server): the first case's 2nd request hangs; the second case makes 1 request, which a
    # fresh server answers and a reused hung one never would.
    hang = "--inject-hang-on-request 2"
    cases = [
        tiny_case("hangs", hang, timeout_s=3, perf_warmup_requests=0, perf_repeat_requests=2),
        tiny_case("after", hang, timeout_s=60, perf_warmup_requests=0, perf_repeat_requests=1),
    ]
    result = pytester.runpytest(*suite(cases, {"hangs": GENEROUS, "after": GENEROUS}), "--diffperf-startup-timeout=120")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "did not answer request 2 within 3 s" in out and "Traceback" not in out
    doc = results(pytester)
    scenarios = {s["scenario"]: s for s in doc["scenarios"]}
    hung, fresh = scenarios["hangs"]["server"], scenarios["after"]["server"]
    assert hung["pid"] != fresh["pid"] and hung["log"] != fresh["log"]
    assert hung["ended"] == "timeout: no answer to request 2" and "--inject-hang-on-request 2" in hung["command"]
    assert {s["pid"] for s in doc["servers"]} == {hung["pid"], fresh["pid"]}
    assert not refservers()


@pytest.mark.parametrize(
    ("flags", "ended"),
    [("--inject-fail-startup", "exit code 1"), ("--inject-crash-on-request 1", "exit code 1")],
)
def test_results_name_the_server_that_failed(pytester, suite, flags, ended):
    result = pytester.runpytest(*suite([tiny_case("broken", flags)], {"broken": GENEROUS}))
    assert result.ret == 1
    doc = results(pytester)
    server = doc["scenarios"][0]["server"]
    assert doc["scenarios"][0]["outcome"] == "error"
    assert server["ended"] == ended and server["pid"] and flags in server["command"]
    assert server["log"].endswith("server-1/server.log")
    (listed,) = doc["servers"]
    assert {k: listed[k] for k in server} == server  # the same server, and whether it got ready
    assert listed["ready"] is (flags != "--inject-fail-startup") and (listed["error"] is None) is listed["ready"]
