"""Unit tests of the shard plan: estimates, group costs, LPT, the shard count, ``K/N`` parsing."""

from __future__ import annotations

import pytest

from pytest_diffperf._util.values import BadValue
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.perf.schema import ScenarioBaseline
from pytest_diffperf.sharding.plan import (
    Estimate,
    Group,
    assign,
    choose_count,
    estimate,
    server_groups,
    shard_spec,
    which_shard,
)


def scenario(e2e_ms: float = 1000.0, **fields) -> ScenarioBaseline:
    base = {"stages_ms": {}, "denoise_step_ms": {}, "expected_e2e_ms": e2e_ms}
    base |= {"expected_avg_denoise_ms": 1.0, "expected_median_denoise_ms": 1.0}
    return ScenarioBaseline.model_validate(base | fields)


def group(key: str, *costs: float) -> Group:
    return Group(key, tuple(f"{key}{i}" for i in range(len(costs))), tuple(Estimate(c, 0.0) for c in costs))


def test_estimates_follow_sglang_fallbacks():
    assert estimate(scenario(estimated_full_test_time_s=80.0)) == Estimate(80.0, 0.0)
    assert estimate(scenario(estimated_full_test_time_s=80.0, expected_load_ms=30000.0)) == Estimate(80.0, 30.0)
    assert estimate(scenario(estimated_full_test_time_s=10.0, expected_load_ms=30000.0)) == Estimate(10.0, 10.0)
    assert estimate(scenario(e2e_ms=5000.0)) == Estimate(125.0, 120.0)  # e2e/1000 + 120, the 120 being the start
    assert estimate(None) == Estimate(300.0, 0.0)


def test_a_shared_server_start_is_counted_once():
    ids = ["a", "b", "c"]
    scenarios = {
        "a": scenario(e2e_ms=5000.0),
        "b": scenario(e2e_ms=3000.0),
        "c": scenario(estimated_full_test_time_s=50.0),
    }
    groups = server_groups(ids, scenarios, lambda sid: "ab" if sid in "ab" else sid)
    assert [(g.key, g.scenarios) for g in groups] == [("ab", ("a", "b")), ("c", ("c",))]
    assert groups[0].cost_s == pytest.approx(5 + 3 + 120)  # not 125 + 123
    assert groups[1].cost_s == 50.0


def test_lpt_puts_costliest_groups_first_on_the_least_loaded_shard():
    shards = assign([group("a", 10), group("b", 7), group("c", 6), group("d", 5), group("e", 4)], 2)
    assert [[g.key for g in s.groups] for s in shards] == [["a", "d"], ["b", "c", "e"]]
    assert [s.estimated_s for s in shards] == [15, 17]
    assert [(s.number, s.of) for s in shards] == [(1, 2), (2, 2)]


def test_lpt_breaks_ties_by_key_whatever_the_input_order():
    groups = [group("x", 5), group("b", 5), group("m", 5), group("a", 5)]
    for order in (groups, groups[::-1], groups[1:] + groups[:1]):
        assert [[g.key for g in s.groups] for s in assign(order, 3)] == [["a", "x"], ["b"], ["m"]]


def test_a_group_is_never_split():
    shards = assign([group("big", 100, 100, 100), group("s1", 1), group("s2", 1)], 3)
    assert [s.scenarios for s in shards] == [["big0", "big1", "big2"], ["s10"], ["s20"]]


@pytest.mark.parametrize(("n", "message"), [(0, "use 1 to 2 shards"), (3, "cannot make 3 shards of 2 server group(s)")])
def test_shard_count_out_of_range(n, message):
    with pytest.raises(DiffperfError, match=message.replace("(", r"\(").replace(")", r"\)")):
        assign([group("a", 1), group("b", 1)], n)


def test_no_scenarios():
    with pytest.raises(DiffperfError, match="no scenarios to shard"):
        assign([], 1)


@pytest.mark.parametrize(
    ("total", "kwargs", "expected"),
    [
        (10199.2, {}, 6),  # ceil(10199/1800) = 6, inside [ceil(T/2400)=5, floor(T/1200)=8]
        (10199.2, {"max_shards": 4}, 4),
        (3000.0, {}, 2),
        (1000.0, {}, 1),  # floor(T/min) = 0 -> 1
        (30000.0, {}, 10),  # SGLang's default cap
        (5000.0, {"target_time": 600.0}, 4),  # ceil(T/600) = 9, clamped to floor(T/1200) = 4
        (5000.0, {"target_time": 4000.0}, 3),  # ceil(T/4000) = 2, raised to ceil(T/2400) = 3
        (5000.0, {"min_time": 3000.0, "max_time": 2000.0}, 3),  # empty range: ceil(T/target)
        (0.0, {}, 1),
    ],
)
def test_choose_count_as_sglang(total, kwargs, expected):
    assert choose_count(total, 100, **kwargs) == expected


def test_choose_count_is_at_most_one_shard_per_group():
    assert choose_count(30000.0, 3) == 3


@pytest.mark.parametrize(("text", "expected"), [("2/4", (2, 4)), (" 1 / 1 ", (1, 1)), ("3/3", (3, 3))])
def test_shard_spec(text, expected):
    assert shard_spec(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("3/2", "shard K/N needs 1 <= K <= N (K is 1-based), got '3/2'"),
        ("0/2", "shard K/N needs 1 <= K <= N (K is 1-based), got '0/2'"),
        ("2", "expected K/N with whole numbers (shard K of N, 1-based, e.g. 2/4), got '2'"),
        ("a/b", "expected K/N with whole numbers"),
        ("-1/2", "expected K/N with whole numbers"),
    ],
)
def test_shard_spec_errors(text, message):
    with pytest.raises(BadValue) as exc:
        shard_spec(text)
    assert str(exc.value).startswith(message)


@pytest.mark.parametrize(
    ("args", "expected"), [(((2, 4), None, None), (2, 4)), ((None, 3, 3), (3, 3)), ((None, None, None), None)]
)
def test_which_shard(args, expected):
    assert which_shard(*args) == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ((1, 2), 1, None),
            "--diffperf-shard: give either --diffperf-shard K/N or --diffperf-shard-id with --diffperf-num-shards",
        ),
        ((None, 1, None), "--diffperf-shard-id: also needs --diffperf-num-shards"),
        ((None, None, 2), "--diffperf-num-shards: also needs --diffperf-shard-id"),
        ((None, 5, 4), "--diffperf-shard-id/--diffperf-num-shards: shard K/N needs 1 <= K <= N"),
    ],
)
def test_which_shard_errors(args, message):
    with pytest.raises(DiffperfError) as exc:
        which_shard(*args)
    assert str(exc.value).startswith(message)
