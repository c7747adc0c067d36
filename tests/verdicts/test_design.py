"""The A/B design: balanced seeded orders, budgets, and the stop rule (scalar and vectorised agree)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.verdicts.design import ABDesign, Decision
from pytest_diffperf.verdicts.vocab import BASE_FIRST, CANDIDATE_FIRST, VERDICTS

designs = st.builds(
    ABDesign,
    request_pairs=st.integers(1, 9),
    max_process_pairs=st.integers(2, 12),
    max_requests=st.just(400),
    seed=st.integers(0, 10**6),
)


@settings(max_examples=80, deadline=None)
@given(designs, st.integers(0, 50))
def test_orders_are_balanced(design, pair):
    orders = design.orders(pair)
    assert len(orders) == design.request_pairs
    assert set(orders) <= {BASE_FIRST, CANDIDATE_FIRST}
    first = orders.count(BASE_FIRST)
    assert abs(first - orders.count(CANDIDATE_FIRST)) <= 1
    both = orders + design.orders(pair + 1)
    assert both.count(BASE_FIRST) == both.count(CANDIDATE_FIRST)  # two process pairs together: exactly balanced


@settings(max_examples=40, deadline=None)
@given(designs, st.integers(0, 50))
def test_orders_and_start_are_seeded(design, pair):
    again = ABDesign(design.request_pairs, design.max_process_pairs, design.max_requests, seed=design.seed)
    assert again.orders(pair) == design.orders(pair)
    assert again.start_order(pair) == design.start_order(pair)
    assert design.start_order(pair) != design.start_order(pair + 1)  # servers alternate who starts first


def test_orders_are_randomised():
    design = ABDesign(request_pairs=8)
    assert len({design.orders(p) for p in range(20)}) > 5
    assert {ABDesign(request_pairs=8, seed=s).orders(0) for s in range(20)} != {design.orders(0)}


def test_budget():
    d = ABDesign(request_pairs=4, max_process_pairs=10, max_requests=80)
    assert (d.requests_per_process_pair, d.process_pair_budget, d.looks) == (8, 10, 9)  # looks from pair 2 on
    d = ABDesign(request_pairs=5, max_process_pairs=10, max_requests=80, min_process_pairs=1)
    assert (d.process_pair_budget, d.looks) == (8, 8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"request_pairs": 0}, "A/B budget: request_pairs: expected an integer >= 1, got 0"),
        ({"max_requests": 2.5}, "A/B budget: max_requests: expected an integer >= 1, got 2.5"),
        (
            {"request_pairs": 50, "max_requests": 80},
            "A/B budget: the budget allows 0 process pair",
        ),
        (
            {"max_process_pairs": 2, "min_process_pairs": 3},
            "fewer than min_process_pairs 3",
        ),
        ({"max_process_pairs": 1}, "a verdict needs 2 process pairs"),
    ],
)
def test_budget_errors(kwargs, message):
    with pytest.raises(DiffperfError, match=message):
        ABDesign(**kwargs)


def test_decide():
    d = ABDesign(request_pairs=4, max_process_pairs=3, min_process_pairs=2)
    assert d.decide(1, "regressed") == Decision(False)  # below the minimum
    assert d.decide(2, "regressed") == Decision(True, "decisive")
    assert d.decide(2, "unchanged") == Decision(True, "decisive")
    assert d.decide(2, "inconclusive") == Decision(False)
    assert d.decide(3, "inconclusive") == Decision(True, "budget")
    with pytest.raises(ValueError, match="at least one process pair"):
        d.decide(0, "unchanged")


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda k: st.tuples(st.just(k), st.integers(1, k), st.lists(st.integers(0, 3), min_size=k, max_size=k))
    )
)
def test_vectorised_stop_rule_is_the_scalar_one(args):
    budget, minimum, codes = args
    d = ABDesign(request_pairs=1, max_process_pairs=budget, max_requests=1000, min_process_pairs=minimum)
    for done in range(1, budget + 1):
        decision = d.decide(done, VERDICTS[codes[done - 1]])
        if decision.stop:
            break
    pairs, final = d.stop_looks(np.array([codes], dtype=np.int8))
    assert int(pairs[0]) == done
    assert int(final[0]) == codes[done - 1]


def test_stop_looks_shape_error():
    with pytest.raises(ValueError, match="expected 10 looks"):
        ABDesign().stop_looks(np.zeros((2, 3), dtype=np.int8))
