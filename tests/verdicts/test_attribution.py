"""Stage attribution: shares on hand-checked numbers, naming, text, invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diffperf.verdicts.attribution import MIN_SHARE, Change, attribute, named, shares


def change(ratio: float, base_ms: float, se: float = 0.01) -> Change:
    return Change(ratio, ratio * math.exp(-3 * se), ratio * math.exp(3 * se), se, base_ms)


def test_the_issue_example():
    """e2e 400 -> 448 ms (+12 %), DenoisingStage 300 -> 345 ms (+15 %): 45 / 48 ms explains 94 %."""
    e2e = Change(1.12, 1.08, 1.16, 0.012, 400.0)
    a = attribute(e2e, {"DenoisingStage": change(1.15, 300.0), "DecodingStage": change(1.0, 90.0)})
    assert a.delta_ms == pytest.approx(48.0)
    assert a.stages[0].stage == "DenoisingStage"
    assert a.stages[0].share == pytest.approx(45 / 48)
    assert a.named == ("DenoisingStage",)
    assert a.text() == "e2e +12.0 % [+8.0, +16.0], DenoisingStage +15.0 % explains 94 %"


def test_two_stages_named_largest_share_first():
    e2e = change(1.2, 500.0)  # +100 ms
    a = attribute(e2e, {"DecodingStage": change(1.3, 100.0), "DenoisingStage": change(1.2, 350.0)})
    assert a.named == ("DenoisingStage", "DecodingStage")
    assert [round(s.share, 2) for s in a.stages] == [0.7, 0.3]
    assert a.text().endswith("DenoisingStage +20.0 % explains 70 %, DecodingStage +30.0 % explains 30 %")


def test_insignificant_or_small_stages_are_not_named():
    e2e = change(1.2, 500.0)
    a = attribute(
        e2e,
        {
            "DenoisingStage": Change(1.25, 0.9, 1.7, 0.2, 350.0),  # +25 % but se 0.2: not significant
            "TextEncodingStage": change(1.5, 10.0),  # significant, 5 ms of 100: 5 % share
        },
    )
    assert a.named == ()
    assert (
        a.text()
        == "e2e +20.0 % [+16.5, +23.7], explained by no single stage (largest: DenoisingStage +25.0 % explains 88 %)"
    )
    assert a.stages[1].share == pytest.approx(0.05)
    assert a.stages[1].share < MIN_SHARE


def test_no_e2e_change_has_no_shares():
    a = attribute(change(1.0, 400.0), {"DenoisingStage": change(1.1, 300.0)})
    assert math.isnan(a.stages[0].share)
    assert a.named == ()
    assert a.text() == "e2e +0.0 % [-3.0, +3.0], explained by no single stage"


def test_improvements_are_attributed_too():
    a = attribute(change(0.9, 400.0), {"DenoisingStage": change(0.88, 300.0)})
    assert a.named == ("DenoisingStage",)
    assert a.stages[0].share == pytest.approx(36 / 40)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(1.0, 500.0), min_size=1, max_size=5),
    st.floats(1.01, 3.0),
    st.floats(0.01, 100.0),
)
def test_shares_of_a_uniform_slowdown_add_up_and_ignore_units(stage_ms, factor, scale):
    """Every stage x factor and e2e = sum of stages: the shares are the stages' parts of e2e, summing to 1."""
    base = np.array(stage_ms)
    e2e = base.sum()
    log_f = np.full_like(base, math.log(factor))
    s = shares(np.log(factor), e2e, log_f, base)
    assert s.sum() == pytest.approx(1.0)
    assert np.allclose(s, base / e2e)
    assert np.allclose(shares(np.log(factor), e2e * scale, log_f, base * scale), s)


def test_named_vectorised():
    e2e_log = np.array([0.1, 0.1, -0.1, 0.1])
    share = np.array([0.5, 0.05, 0.5, np.nan])
    log_ratio = np.array([0.1, 0.1, -0.1, 0.1])
    se = np.array([0.01, 0.01, 0.01, 0.01])
    assert named(e2e_log, share, log_ratio, se).tolist() == [True, False, True, False]


def test_a_share_over_all_of_e2e_reads_as_all_of_it_in_ms():
    """e2e 3080 ms +3.4 % (+105 ms) while DenoisingStage 150 ms grows +190 % (+285 ms): no '268 %'."""
    e2e = change(1.034, 3080.0)
    a = attribute(e2e, {"DenoisingStage": change(2.9, 150.0)})
    assert a.stages[0].share > 1
    assert a.text() == "e2e +3.4 % [+0.3, +6.5], DenoisingStage +190.0 % explains all of it (+285 ms; e2e +105 ms)"
