"""A/B over a server group's shared process pairs, and pairs started ahead: the reference server end to end."""

from __future__ import annotations

import re

import pytest

from tests.support.suite import GENEROUS, refservers, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

SLOWER = "--diffperf-candidate=args=--inject-delay DenoisingStage=150"  # doubles a tiny case's e2e (test_ab_e2e)
GROUP = [tiny_case("one", perf_warmup_requests=1), tiny_case("two", seed=7, num_inference_steps=3)]  # one server group


def ab(suite, *extra: str) -> list[str]:
    return [
        *suite(GROUP, {c["id"]: GENEROUS for c in GROUP}),
        "--diffperf-base=current",
        "--diffperf-ab-tolerance=10%",
        *extra,
    ]


def events(out: str) -> list[str]:
    """The run's A/B progress lines, in order, without their variable tails."""
    found = re.findall(r"^diffperf: (starting \w+ server of process pair \d+|\w+ server of process pair \d+ ready|"
                       r"measuring process pair \d+: [\w, ]+)", out, re.M)  # fmt: skip
    return [e.strip() for e in found]


def pids(scenario: dict) -> dict[int, set[int]]:
    """Each process pair's server pids, as the scenario's results record them."""
    out: dict[int, set[int]] = {}
    for server in scenario["ab"]["servers"]:
        out.setdefault(server["process_pair"], set()).add(server["pid"])
    return out


def test_a_groups_scenarios_share_process_pairs_and_a_regression_is_named(pytester, suite):
    """Both scenarios regress on the same process pairs (two, a third where the noise asks): 2 servers per pair for
    the group instead of per scenario.
    On the CPU the second pair starts with the first (prestart auto) and is ready before any request is measured."""
    result = pytester.runpytest(*ab(suite), SLOWER)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    doc = results(pytester)
    scenarios = {s["scenario"]: s for s in doc["scenarios"]}
    for sid, other in (("one", "two"), ("two", "one")):
        record = scenarios[sid]["ab"]
        assert record["verdict"] == "regressed" and record["attribution"]["named"][0] == "DenoisingStage"
        assert record["shared_with"] == [other] and record["process_pairs"] >= 2
    # the same servers measured both (a noisy pair can take one scenario to a third pair: still the group's)
    one, two = pids(scenarios["one"]), pids(scenarios["two"])
    shared = one.keys() & two.keys()
    assert len(shared) >= 2 and all(one[n] == two[n] for n in shared)
    pairs = max(len(one), len(two))
    assert all(len(servers) == 2 for servers in (*one.values(), *two.values()))
    assert len(re.findall(r"^diffperf: starting \w+ server of process pair", out, re.M)) == 2 * pairs, out
    seen = events(out)
    assert "measuring process pair 1: one, two" in seen and "measuring process pair 2: one, two" in seen
    first = seen.index("measuring process pair 1: one, two")
    before = seen[:first]
    # sharing the CPU: pair 2 started with pair 1, and no start was in flight when pair 1 measured
    assert {"starting base server of process pair 2", "candidate server of process pair 2 ready"} <= set(before)
    assert len([e for e in before if e.endswith("ready")]) == 4
    assert not refservers()


def test_fresh_pairs_per_scenario_and_identical_builds_are_not_regressed(pytester, suite):
    """``--diffperf-ab-pairs scenario``: each scenario its own process pairs; no change is never regressed."""
    args = ab(
        suite, "--diffperf-ab-pairs=scenario", "--diffperf-ab-max-process-pairs=2", "--diffperf-ab-request-pairs=1"
    )
    # the default busy share: a pair measured while other tests take the CPUs widens the priors (docs/verdicts.md)
    result = pytester.runpytest(*args, "--diffperf-ab-prestart=0", "--diffperf-busy-share=25%")
    assert result.ret == 0, result.stdout.str()
    scenarios = {s["scenario"]: s for s in results(pytester)["scenarios"]}
    assert {s["ab"]["verdict"] for s in scenarios.values()} <= {"unchanged", "inconclusive", "improved"}
    for s in scenarios.values():  # each scenario's own two pairs, each metered
        windows = s["interference"]["windows"]
        assert len(windows) == 2 and s["ab"]["busy_pairs"] == sum(w["busy"] for w in windows)
    one, two = (set().union(*pids(scenarios[sid]).values()) for sid in ("one", "two"))
    assert len(one) == len(two) == 4 and not one & two  # 2 pairs each, none shared
    assert scenarios["one"]["ab"]["shared_with"] == []
    seen = events(result.stdout.str())
    # no prestart: pair 2 starts only once pair 1 has measured
    assert seen.index("measuring process pair 1: one") < seen.index("starting base server of process pair 2")
    assert not refservers()


def test_with_devices_for_two_pairs_the_next_pair_loads_while_one_measures(pytester, suite):
    """Two devices for a 1-device case: pair 2 starts on the second before pair 1 measures, and is found ready
    only after pair 1 has measured (the reference server ignores the device variable; the plugin's order shows)."""
    args = ab(suite, "--diffperf-devices=0,1", "-k", "one")
    result = pytester.runpytest(*args, SLOWER)
    result.assert_outcomes(failed=1)
    seen = events(result.stdout.str())
    measuring = seen.index("measuring process pair 1: one")
    assert seen.index("starting base server of process pair 2") < measuring
    assert seen.index("starting candidate server of process pair 2") < measuring
    assert seen.index("base server of process pair 2 ready") > measuring
    scenario = results(pytester)["scenarios"][0]
    assert scenario["ab"]["verdict"] == "regressed"
    devices = {(s["process_pair"], s["side"]): s["devices"] for s in scenario["ab"]["servers"]}
    assert devices[0, "base"] == devices[0, "candidate"] == {"CUDA_VISIBLE_DEVICES": "0"}
    assert devices[1, "base"] == devices[1, "candidate"] == {"CUDA_VISIBLE_DEVICES": "1"}
    assert not refservers()


def test_pairs_started_together_are_as_many_as_the_verdict_is_projected_to_need(pytester, suite):
    """Identical builds, one request pair per process pair: undecided after the minimum of 2 pairs, projected to need
    more, so pairs 3 and 4 (and 5 where projected) start together (prestart auto on the CPU: up to 4 at once) and
    are ready before pair 3 measures; a regression stops after 2 pairs and starts no more (the first test)."""
    args = ab(suite, "-k", "one", "--diffperf-ab-request-pairs=1", "--diffperf-ab-max-process-pairs=5")
    result = pytester.runpytest(*args, "--diffperf-busy-share=25%")
    out = result.stdout.str()
    assert result.ret == 0, out
    record = results(pytester)["scenarios"][0]["ab"]
    assert record["verdict"] == "inconclusive" and record["process_pairs"] == 5, record["headline"]
    seen = events(out)
    third = seen.index("measuring process pair 3: one")
    assert seen.index("measuring process pair 2: one") < seen.index("starting base server of process pair 3")
    # started together, ahead of pair 3: pairs 3 and 4 at least (5 too when the projection already asks for all)
    assert {f"{side} server of process pair {i} ready" for side in ("base", "candidate") for i in (3, 4)} <= set(
        seen[:third]
    )
    assert len(re.findall(r"^diffperf: starting \w+ server of process pair", out, re.M)) == 10
    assert not refservers()
