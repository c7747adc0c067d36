"""A/B analysis and the adaptive run: verdicts, stage attribution, the scalar and vectorised paths agree."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_diffperf.verdicts.abstats import (
    ABResult,
    MetricResult,
    ProcessPairSamples,
    Sequential,
    analyse,
    judge_ab_metrics,
    run,
)
from pytest_diffperf.verdicts.attribution import Change, attribute
from pytest_diffperf.verdicts.design import ABDesign
from pytest_diffperf.verdicts.metrics import VerdictPolicy, request_metrics
from pytest_diffperf.verdicts.vocab import VERDICTS

from .synth import FakePipeline

DESIGN = ABDesign()


def pair(base_ms: list[float], cand_ms: list[float], metric: str = "e2e") -> ProcessPairSamples:
    return ProcessPairSamples([{metric: b} for b in base_ms], [{metric: c} for c in cand_ms])


def test_exact_ratio_interval_and_verdict():
    """Every request pair exactly +10 %: the ratio is 1.1 and the interval comes from the priors alone."""
    pairs = [pair([100.0] * 4, [110.0] * 4), pair([200.0] * 4, [220.0] * 4)]
    result = analyse(pairs, DESIGN)
    e2e = result.metrics["e2e"]
    assert e2e.ratio == pytest.approx(1.1)
    assert (e2e.process_pairs, e2e.request_pairs) == (2, 8)
    assert (e2e.base_ms, e2e.candidate_ms) == (150.0, 165.0)
    within2 = 20 * 0.09**2 / (20 + 6)  # prior within pooled with the run's 0 on 8 - 2 degrees of freedom
    v = 8 * (0.04**2 + math.pi / 2 * within2 / 4) / (8 + 1)  # offsets agree: s2 = 0
    # the only gated metric here gets all of alpha = 1 %; the first look (after the minimum of 2 process
    # pairs) of 9 spends (1 / 9)**2 of it
    z = NormalDist().inv_cdf(1 - 0.01 * (1 / 9) ** 2)
    assert e2e.se == pytest.approx(math.sqrt(v / 2))
    assert e2e.low == pytest.approx(1.1 * math.exp(-z * e2e.se))
    assert e2e.high == pytest.approx(1.1 * math.exp(z * e2e.se))
    assert e2e.verdict == "inconclusive"  # [0.96, 1.25]: straddles the 10 % tolerance
    assert result.verdict == "inconclusive"
    assert result.requests == 16
    big = analyse([pair([100.0] * 4, [150.0] * 4), pair([200.0] * 4, [300.0] * 4)], DESIGN)
    assert big.verdict == "regressed"


def test_identical_is_never_regressed_and_unchanged_once_precise():
    pairs = [pair([100.0 + i] * 4, [100.0 + i] * 4) for i in range(10)]
    result = analyse(pairs, DESIGN)
    assert result.metrics["e2e"].ratio == 1.0
    assert result.verdict == "unchanged"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.floats(50, 5000), min_size=1, max_size=6), min_size=1, max_size=6),
    st.floats(0.01, 100),
)
def test_identical_inputs_never_regressed_and_scale_free(values, scale):
    pairs = [pair(v, v) for v in values]
    result = analyse(pairs, DESIGN)
    assert result.verdict in ("unchanged", "inconclusive")
    assert result.metrics["e2e"].ratio == pytest.approx(1.0)
    scaled = analyse([pair([x * scale for x in v], [x * scale for x in v]) for v in values], DESIGN)
    assert scaled.verdict == result.verdict
    assert scaled.metrics["e2e"].low == pytest.approx(result.metrics["e2e"].low)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.floats(50, 5000), st.floats(50, 5000)), min_size=1, max_size=6), min_size=1, max_size=6
    ),
    st.floats(0.01, 100),
)
def test_ratios_are_scale_invariant_and_antisymmetric(values, scale):
    pairs = [pair([b for b, _ in v], [c for _, c in v]) for v in values]
    scaled = [pair([b * scale for b, _ in v], [c * scale for _, c in v]) for v in values]
    swapped = [pair([c for _, c in v], [b for b, _ in v]) for v in values]
    a, s, w = (analyse(p, DESIGN).metrics["e2e"] for p in (pairs, scaled, swapped))
    assert s.ratio == pytest.approx(a.ratio)
    assert s.verdict == a.verdict
    assert w.ratio == pytest.approx(1 / a.ratio)
    assert w.verdict == {"regressed": "improved", "improved": "regressed"}.get(a.verdict, a.verdict)


def test_missing_metric_on_one_side_leaves_the_pair_out():
    base = [{"e2e": 100.0, "stage[X]": 5.0}, {"e2e": 100.0}]
    cand = [{"e2e": 120.0}, {"e2e": 120.0, "stage[X]": 9.0}]
    result = analyse([ProcessPairSamples(base, cand)], DESIGN)
    assert result.metrics["stage[X]"].request_pairs == 0
    assert math.isnan(result.metrics["stage[X]"].ratio)
    assert result.metrics["stage[X]"].verdict == "inconclusive"
    assert result.metrics["e2e"].request_pairs == 2


def test_load_is_one_ratio_per_process_pair():
    pairs = [ProcessPairSamples([{"e2e": 1.0}], [{"e2e": 1.0}], 4000.0, 4400.0 * (1 + i / 100)) for i in range(3)]
    load = analyse(pairs, DESIGN).metrics["load"]
    assert (load.process_pairs, load.request_pairs) == (3, 3)
    assert load.ratio == pytest.approx(math.exp(np.mean([math.log(1.1 * (1 + i / 100)) for i in range(3)])))
    assert not load.gated


def test_length_mismatch():
    with pytest.raises(ValueError, match="2 base requests but 1 candidate requests"):
        ProcessPairSamples([{}, {}], [{}])


def test_injected_denoise_regression_is_regressed_with_the_stage_named():
    result = run(DESIGN, FakePipeline(seed=1, slowdown={"DenoisingStage": 1.3}))
    assert result.verdict == "regressed"
    assert result.attribution is not None
    assert result.attribution.named == ("DenoisingStage",)
    assert result.stop == "decisive"
    text = result.text()
    assert text.startswith("regressed: e2e +")
    assert "DenoisingStage +" in text
    assert "explains" in text


def test_injected_decode_regression_names_decode():
    policy = VerdictPolicy()
    result = run(
        ABDesign(request_pairs=4, max_process_pairs=10), FakePipeline(seed=2, slowdown={"DecodingStage": 3.0}), policy
    )
    assert result.verdict == "regressed"
    assert result.attribution is not None
    assert result.attribution.named[0] == "DecodingStage"


@pytest.mark.parametrize("seed", range(8))
def test_identical_builds_are_never_regressed(seed):
    result = run(DESIGN, FakePipeline(seed=100 + seed))
    assert result.verdict != "regressed"
    assert result.process_pairs <= DESIGN.process_pair_budget


def test_inconclusive_is_reachable_and_reported():
    """A change near the tolerance, budget spent: neither ruled in nor out, and said so."""
    design = ABDesign(request_pairs=3, max_process_pairs=2, max_requests=12)
    result = run(design, lambda i, o, s: pair([100.0, 102.0, 98.0], [110.0, 112.0, 108.0]))
    assert result.verdict == "inconclusive"
    assert (result.stop, result.process_pairs, result.requests) == ("budget", 2, 12)
    assert result.text().startswith("inconclusive: e2e +10.0 % [")
    assert result.text().endswith("(2 process pair(s), 12 requests, stopped: budget)")


def test_run_uses_the_design_schedule():
    seen = []

    def measure(index, orders, start):
        seen.append((index, orders, start))
        return FakePipeline(seed=index)(index, orders, start)

    design = ABDesign(request_pairs=3, max_process_pairs=2, max_requests=12, seed=7)
    run(design, measure)
    assert [s[0] for s in seen] == list(range(len(seen)))
    assert all(orders == design.orders(i) and start == design.start_order(i) for i, orders, start in seen)


def test_a_scenario_sharing_process_pairs_stops_as_it_would_alone():
    """Two scenarios fed the same process pairs (a server group's): each stops by its own rule, after the pairs
    ``run`` gives it alone, with the same result; a stopped scenario takes no more pairs."""

    def pipelines() -> dict[str, FakePipeline]:  # the same draws each time
        return {"slow": FakePipeline(seed=3, slowdown={"DenoisingStage": 2.0}), "same": FakePipeline(seed=3)}

    alone = {name: run(DESIGN, pipeline) for name, pipeline in pipelines().items()}
    shared = {"slow": Sequential(DESIGN), "same": Sequential(DESIGN)}
    fed = pipelines()
    index = 0
    while any(s.result is None for s in shared.values()):
        for name, pipeline in fed.items():
            if shared[name].result is None:
                shared[name].add(pipeline(index, DESIGN.orders(index), DESIGN.start_order(index)))
        index += 1
    assert {name: s.result for name, s in shared.items()} == alone
    assert alone["slow"].process_pairs < alone["same"].process_pairs == index
    with pytest.raises(ValueError, match="the scenario has stopped"):
        shared["slow"].add(fed["slow"](index, DESIGN.orders(index), DESIGN.start_order(index)))


def _busy_run(seed: int, design: ABDesign, *, busy: bool, slowdown: float = 1.0) -> ABResult:
    """Identical builds (or DenoisingStage ``slowdown`` x) on a busy machine: process offsets 8x the quiet machine's."""
    pipeline = FakePipeline(seed, {"DenoisingStage": slowdown}, offset_sd=0.25)
    scenario = Sequential(design)
    while scenario.result is None:
        index = len(scenario.pairs)
        scenario.add(pipeline(index, design.orders(index), design.start_order(index)), busy=busy)
    return scenario.result


def test_process_pairs_measured_busy_are_judged_with_wider_priors():
    """The minimum budget (k=2, m=1) on a busy machine: with the quiet machine's priors identical builds are often
    called regressed or improved; measured busy (priors x4) rarely, and the record says why."""
    design = ABDesign(request_pairs=1, max_process_pairs=2, max_requests=4)
    decisive = {
        busy: sum(_busy_run(seed, design, busy=busy).verdict in ("regressed", "improved") for seed in range(200))
        for busy in (False, True)
    }
    assert decisive[False] >= 40 and decisive[True] <= 2, decisive
    result = _busy_run(0, design, busy=True)
    assert result.busy_pairs == 2 and result.text().endswith("; 2 measured busy: noise priors x4")
    assert _busy_run(0, design, busy=False).busy_pairs == 0


def test_a_doubled_denoising_stage_is_still_regressed_on_a_busy_machine():
    results = [_busy_run(seed, DESIGN, busy=True, slowdown=2.0) for seed in range(10)]
    assert [r.verdict for r in results] == ["regressed"] * 10


def _load_log(pair: ProcessPairSamples) -> float:
    assert pair.base_load_ms is not None and pair.candidate_load_ms is not None  # FakePipeline reports both
    return math.log(pair.candidate_load_ms / pair.base_load_ms)


@pytest.mark.parametrize("seed", range(4))
def test_run_agrees_with_the_vectorised_path(seed):
    """The benchmark's path (judge over look prefixes + stop_looks) gives run()'s verdict and stop."""
    design = ABDesign(request_pairs=3, max_process_pairs=5, max_requests=30)
    fake = FakePipeline(seed=seed, slowdown={"DenoisingStage": 1.12})
    pairs = [fake(i, design.orders(i), design.start_order(i)) for i in range(design.process_pair_budget)]
    replay = iter(pairs)
    result = run(design, lambda i, o, s: next(replay))
    names = sorted(pairs[0].base[0])
    logs = {
        n: np.array([[math.log(c[n] / b[n]) for b, c in zip(p.base, p.candidate, strict=True)] for p in pairs])
        for n in names
    }
    logs["load"] = np.array([[_load_log(p)] for p in pairs])
    codes = np.array(
        [
            [
                judge_ab_metrics({n: d[: k + 1] for n, d in logs.items()}, VerdictPolicy(), design).scenario
                for k in range(5)
            ]
        ]
    )
    stop, final = design.stop_looks(codes.astype(np.int8))
    assert (int(stop[0]), VERDICTS[int(final[0])]) == (result.process_pairs, result.verdict)


def test_metric_text():
    pairs = [pair([100.0] * 4, [100.0] * 4, "stage[DecodingStage]")] * 2
    text = analyse(pairs, DESIGN).metrics["stage[DecodingStage]"].text()
    assert text.startswith("DecodingStage +0.0 % [")
    assert "tolerance 50%, not gated; 100.00 -> 100.00 ms" in text


def test_request_metrics_names():
    m = request_metrics(400.0, {"DenoisingStage": 300.0}, [10.0, 20.0, 30.0])
    assert m == {"e2e": 400.0, "stage[DenoisingStage]": 300.0, "avg_denoise": 20.0, "median_denoise": 20.0}


def test_a_run_noisier_than_its_prior_is_flagged():
    rng = np.random.default_rng(0)
    noisy = [pair(list(100 * rng.lognormal(0, 0.3, 8)), list(100 * rng.lognormal(0, 0.3, 8))) for _ in range(2)]
    result = analyse(noisy, DESIGN)
    e2e = result.metrics["e2e"]
    assert e2e.noisier_than_prior
    assert e2e.within > 1.5 * e2e.within_prior
    assert "e2e noisier than calibrated (within " in result.text()
    quiet = [pair(list(100 * rng.lognormal(0, 0.02, 8)), list(100 * rng.lognormal(0, 0.02, 8))) for _ in range(2)]
    assert not analyse(quiet, DESIGN).metrics["e2e"].noisier_than_prior
    assert "noisier" not in analyse(quiet, DESIGN).text()


def _metric(name: str, ratio: float, low: float, high: float, verdict, base_ms: float) -> MetricResult:
    return MetricResult(name=name, kind="e2e" if name == "e2e" else "stage", gated=True, tolerance=0.1,
                        ratio=ratio, low=low, high=high, se=0.05, verdict=verdict, base_ms=base_ms,
                        candidate_ms=base_ms * ratio, process_pairs=2, request_pairs=8, within=0.01, within_dof=6,
                        within_prior=0.03)  # fmt: skip


def test_a_scenario_regressed_through_a_stage_never_calls_an_inconclusive_e2e_regressed():
    """The trial's wan_tiny_i2v: e2e +3.4 % inconclusive, DenoisingStage +190 % regressed: the stage leads,
    e2e follows with its own verdict, and the share over 100 % reads as all of it."""
    metrics = {
        "e2e": _metric("e2e", 1.034, 0.864, 1.239, "inconclusive", 3080.0),
        "stage[DenoisingStage]": _metric("stage[DenoisingStage]", 2.902, 2.4, 3.5, "regressed", 150.0),
    }
    attribution = attribute(
        Change(1.034, 0.864, 1.239, 0.05, 3080.0), {"DenoisingStage": Change(2.902, 2.4, 3.5, 0.05, 150.0)}
    )
    result = ABResult("regressed", metrics, attribution, process_pairs=2, requests=16, stop="decisive")
    assert result.text() == (
        "regressed: DenoisingStage +190.2 % [+140.0, +250.0] regressed; e2e +3.4 % [-13.6, +23.9] inconclusive, "
        "DenoisingStage +190.2 % explains all of it (+285 ms; e2e +105 ms) (2 process pair(s), 16 requests, "
        "stopped: decisive)"
    )


def test_the_projection_of_identical_pairs_is_never_optimistic():
    """Identical builds, the offsets agreeing: held as they are, the interval fits the tolerance after the projected
    pairs, not one fewer; more such pairs only narrow the moderated variance, so the run stops there or earlier."""
    pairs = [pair([100.0 + i] * 4, [100.0 + i] * 4) for i in range(DESIGN.process_pair_budget)]
    projected = analyse(pairs[:2], DESIGN).projected_pairs
    assert 2 < projected < DESIGN.process_pair_budget
    scenario = Sequential(DESIGN)
    stopped = next(k for k in range(1, len(pairs) + 1) if scenario.add(pairs[k - 1]) is not None)
    assert scenario.result is not None and scenario.result.verdict == "unchanged"
    assert 2 < stopped <= projected
    assert analyse(pairs[:projected], DESIGN).verdict == "unchanged"


def test_the_projection_is_the_next_look_for_a_clear_change_and_the_budget_for_scattered_pairs():
    """A doubled e2e decides at the first look it may take; a steady +10 % (regressed beyond the 0 floor) by the
    projected pair, as its run does; pairs scattering +-30 % around their mean cannot decide within the budget."""
    doubled = analyse([pair([100.0] * 4, [200.0] * 4)], DESIGN)
    assert doubled.projected_pairs == DESIGN.min_process_pairs
    steady = [pair([100.0] * 4, [110.0] * 4)] * DESIGN.process_pair_budget
    projected = analyse(steady[:2], DESIGN).projected_pairs
    assert run(DESIGN, lambda i, o, s: steady[i]).process_pairs <= projected < DESIGN.process_pair_budget
    scattered = [pair([100.0] * 4, [c] * 4) for c in (130.0, 77.0, 130.0)]
    assert analyse(scattered, DESIGN).projected_pairs == DESIGN.process_pair_budget
    short = ABDesign(request_pairs=4, max_process_pairs=3)
    assert analyse(scattered, short).projected_pairs == short.process_pair_budget == 3
