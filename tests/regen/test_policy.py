"""regen.decide: the three policies on plain dicts, what is kept, and the option parsers."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diffperf.perf.lint import lint_scenario
from pytest_diffperf.regen.policy import changes, decide

EXISTING = {
    "notes": "from CI run 123",
    "stages_ms": {"TextEncodingStage": 10.0, "DenoisingStage": 400.0, "ImageEncodingStage": 7.0, "Flaky": None},
    "denoise_step_ms": {"0": 100.0, "1": 100.0, "2": 100.0, "3": 100.0},
    "expected_e2e_ms": 600.0,
    "expected_avg_denoise_ms": 100.0,
    "expected_median_denoise_ms": 100.0,
    "expected_load_ms": 5000.0,
    "load_peak_vram_mb": 40000.0,
    "timing_tolerance": 0.5,
    "estimated_full_test_time_s": 60,
    "custom_key": {"kept": True},
}


def measured(scale: float = 1.0, steps: int = 4) -> dict:
    """A measured snapshot (as snapshot.entry_from_measurement writes it), every timing times ``scale``."""
    step = {str(i): round(90.0 * scale, 2) for i in range(steps)}
    return {
        "stages_ms": {"TextEncodingStage": round(9 * scale, 2), "DenoisingStage": round(370 * scale, 2), "Flaky": 3.0},
        "denoise_step_ms": step,
        "expected_e2e_ms": round(540 * scale, 2),
        "expected_avg_denoise_ms": round(90 * scale, 2),
        "expected_median_denoise_ms": round(90 * scale, 2),
        "expected_load_ms": round(4500 * scale, 2),
        "runtime_peak_host_anon_mb": 550.0,
        "estimated_full_test_time_s": 12.3,
    }


def test_new_scenario_is_added_as_measured():
    d = decide("improve", None, measured())
    assert (d.action, d.entry, d.reason) == ("added", measured(), "no baseline yet")


def test_replace_takes_every_measured_field_and_keeps_everything_else_in_order():
    d = decide("replace", EXISTING, measured(1.5))
    assert d.action == "replaced"
    entry = d.entry
    assert list(entry)[: len(EXISTING)] == list(EXISTING)  # key order kept, new keys appended
    assert list(entry)[len(EXISTING) :] == ["runtime_peak_host_anon_mb"]
    for key in ("notes", "timing_tolerance", "custom_key", "load_peak_vram_mb"):
        assert entry[key] == EXISTING[key]
    assert entry["expected_e2e_ms"] == 810.0 and entry["estimated_full_test_time_s"] == 12.3
    assert entry["denoise_step_ms"] == measured(1.5)["denoise_step_ms"]
    # Measured stages are set, an unmeasured one is kept, an explicit null stays null.
    assert entry["stages_ms"] == {
        "TextEncodingStage": 13.5,
        "DenoisingStage": 555.0,
        "ImageEncodingStage": 7.0,
        "Flaky": None,
    }
    assert d.previous == EXISTING


def test_replace_with_fewer_steps_drops_the_old_step_indices():
    entry = decide("replace", EXISTING, measured(steps=2)).entry
    assert entry["denoise_step_ms"] == {"0": 90.0, "1": 90.0}


def test_null_top_level_field_is_never_turned_on():
    existing = {**EXISTING, "expected_load_ms": None}
    for policy in ("replace", "tighten"):
        assert decide(policy, existing, measured(0.5)).entry["expected_load_ms"] is None


@pytest.mark.parametrize(
    ("scale", "changed", "reason"),
    [
        (1.10, {}, "e2e 600.00 -> 594.00 ms (-1.0%), improve needs at least -5.0%"),
        (2.00, {}, "e2e 600.00 -> 1080.00 ms (+80.0%), improve needs at least -5.0%"),
        (1.0, {"expected_load_ms": 4000.0}, "load got worse: 4000.00 -> 4500.00 (+12.5%)"),
        (1.0, {"expected_median_denoise_ms": 80.0}, "median denoise got worse: 80.00 -> 90.00 (+12.5%)"),
        (1.0, {"stages_ms": {"DenoisingStage": 300.0}}, "DenoisingStage got worse: 300.00 -> 370.00 (+23.3%)"),
    ],
)
def test_improve_keeps_and_says_why(scale, changed, reason):
    existing = {**EXISTING, **changed}
    d = decide("improve", existing, measured(scale))
    assert (d.action, d.entry, d.reason) == ("kept", existing, reason)
    assert d.changes() == []


def test_improve_replaces_on_enough_gain_with_nothing_worse():
    d = decide("improve", EXISTING, measured())
    assert d.action == "replaced"
    assert d.reason == "e2e 600.00 -> 540.00 ms (-10.0%), no top-level metric worse"
    assert d.entry == decide("replace", EXISTING, measured()).entry


def test_improve_threshold_is_the_option():
    assert decide("improve", EXISTING, measured(), 0.15).action == "kept"
    assert decide("improve", EXISTING, measured(), 0.10).action == "replaced"


def test_improve_keeps_a_gain_its_run_judged_a_regression_and_only_improve_looks():
    # SGLang's rule: ">= 5 % e2e improvement and no regression", each replaced whole with one request's values
    regression = "DecodingStage failed (profile pr_test)"
    d = decide("improve", EXISTING, measured(), regression=regression)
    assert (d.action, d.entry) == ("kept", EXISTING)
    assert d.reason == "e2e 600.00 -> 540.00 ms (-10.0%), but the run judged a regression: " + regression
    assert decide("replace", EXISTING, measured(), regression=regression).action == "replaced"


def test_improve_on_an_unguarded_baseline_keeps_it():
    d = decide("improve", {**EXISTING, "expected_e2e_ms": 0.0}, measured())
    assert (d.action, d.reason) == ("kept", "the baseline's e2e is 0 or missing: nothing to improve on")


def test_tighten_is_a_fieldwise_minimum_with_consistent_aggregates():
    m = measured()
    m["denoise_step_ms"] = {"0": 120.0, "1": 50.0, "2": 90.0, "3": 130.0}
    m["expected_load_ms"] = 9000.0
    d = decide("tighten", EXISTING, m)
    assert d.action == "tightened"
    e = d.entry
    assert e["denoise_step_ms"] == {"0": 100.0, "1": 50.0, "2": 90.0, "3": 100.0}
    assert e["expected_avg_denoise_ms"] == 85.0 and e["expected_median_denoise_ms"] == 95.0
    assert e["expected_load_ms"] == 5000.0 and e["expected_e2e_ms"] == 540.0
    assert e["stages_ms"]["ImageEncodingStage"] == 7.0 and e["stages_ms"]["Flaky"] is None
    assert e["runtime_peak_host_anon_mb"] == 550.0  # a field the baseline lacked is added
    assert not [x for x in lint_scenario(e) if x[1].startswith("expected_")]


def test_tighten_keeps_when_nothing_is_lower_or_the_step_map_changed():
    slower = {**measured(2.0), "estimated_full_test_time_s": 99.0}
    del slower["runtime_peak_host_anon_mb"]
    d = decide("tighten", EXISTING, slower)
    assert (d.action, d.entry, d.reason) == ("kept", EXISTING, "no measured value is lower")
    d = decide("tighten", EXISTING, measured(0.5, steps=6))
    assert d.action == "kept" and "step map changed (4 -> 6 steps)" in d.reason


numbers = st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda x: round(x, 2))
step_maps = st.integers(1, 6).flatmap(lambda n: st.lists(numbers, min_size=n, max_size=n))
stage_maps = st.dictionaries(
    st.sampled_from(["TextEncodingStage", "DenoisingStage", "DecodingStage"]), numbers | st.none()
)


@st.composite
def scenarios(draw, steps: list[float]):
    entry = {
        "stages_ms": draw(stage_maps),
        "denoise_step_ms": {str(i): v for i, v in enumerate(steps)},
        "expected_e2e_ms": draw(numbers),
        "expected_avg_denoise_ms": draw(numbers),
        "expected_median_denoise_ms": draw(numbers),
    }
    for key in ("expected_load_ms", "estimated_full_test_time_s", "runtime_peak_host_anon_mb", "load_peak_vram_mb"):
        if draw(st.booleans()):
            entry[key] = draw(numbers | st.none())
    return entry


@st.composite
def pairs(draw):
    steps = draw(step_maps)
    same_count = draw(st.lists(numbers, min_size=len(steps), max_size=len(steps)))
    other = draw(step_maps)
    return draw(scenarios(steps)), draw(scenarios(draw(st.sampled_from([same_count, other]))))


def numeric_leaves(entry: dict) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for key, value in entry.items():
        for sub, leaf in value.items() if isinstance(value, dict) else [(None, value)]:
            if isinstance(leaf, (int, float)) and not isinstance(leaf, bool):
                out[(key, sub) if sub is not None else (key,)] = leaf
    return out


# 100 examples, not CI's 400: a draw is a nested document (~10 ms to generate, the check itself is cheap)
@settings(deadline=None, max_examples=100)
@given(pairs())
def test_tighten_never_raises_a_value(pair):
    existing, measurement = pair
    before = copy.deepcopy(existing)
    d = decide("tighten", existing, measurement)
    assert existing == before  # the input is not modified
    old, new = numeric_leaves(existing), numeric_leaves(d.entry)
    for path, value in old.items():
        assert new[path] <= value, (path, value, new[path])
    for key, value in existing.items():  # nothing is dropped; nulls stay null
        assert key in d.entry
        if value is None:
            assert d.entry[key] is None
    assert all(new_value <= old_value for _, old_value, new_value in d.changes() if old_value is not None)
    assert (d.action == "kept") == (d.entry == existing)


def test_changes_lists_numeric_differences():
    old = {"expected_e2e_ms": 100.0, "stages_ms": {"A": 1.0}, "notes": "x"}
    new = {"expected_e2e_ms": 90.0, "stages_ms": {"A": 1.0, "B": 2.0}, "notes": "y", "expected_load_ms": 5.0}
    assert changes(old, new) == [
        ("expected_e2e_ms", 100.0, 90.0),
        ("stages_ms.B", None, 2.0),
        ("expected_load_ms", None, 5.0),
    ]


OWN = {"cpu_ms": 180.0, "wait_ms": 300.0}  # the request CPU figures of EXISTING's e2e
MEASURED_OWN = {"cpu_ms": 170.0, "wait_ms": 20.0}


@pytest.mark.parametrize("policy", ["replace", "improve"])
def test_the_request_cpu_figures_go_with_the_measured_e2e_that_replaces(policy):
    d = decide(policy, {**EXISTING, "request_cpu": OWN}, {**measured(0.8), "request_cpu": MEASURED_OWN})
    assert d.action == "replaced" and d.entry["request_cpu"] == MEASURED_OWN
    assert not [key for key, _, _ in d.changes() if key.startswith("request_cpu")]  # no limit: not a change listed
    assert list(d.entry).index("request_cpu") == len(EXISTING)  # its place kept
    # a measurement whose wait was not read leaves none: the old figures belong to the old e2e
    assert "request_cpu" not in decide(policy, {**EXISTING, "request_cpu": OWN}, measured(0.8)).entry


def test_tighten_keeps_the_request_cpu_figures_of_the_e2e_it_keeps():
    existing = {**EXISTING, "request_cpu": OWN}
    lower = decide("tighten", existing, {**measured(0.8), "request_cpu": MEASURED_OWN})
    assert lower.entry["expected_e2e_ms"] == 432.0 and lower.entry["request_cpu"] == MEASURED_OWN
    higher = decide("tighten", existing, {**measured(1.5), "request_cpu": {"cpu_ms": 1.0, "wait_ms": 1.0}})
    assert higher.entry["expected_e2e_ms"] == 600.0 and higher.entry["request_cpu"] == OWN  # not a field-wise min


def test_a_kept_entry_keeps_its_request_cpu_figures():
    d = decide("improve", {**EXISTING, "request_cpu": OWN}, {**measured(1.2), "request_cpu": MEASURED_OWN})
    assert d.action == "kept" and d.entry["request_cpu"] == OWN
