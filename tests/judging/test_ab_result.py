"""An A/B scenario's result without servers: perf records in, ratios, memory against the base, the record out."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_diffperf.cases import Case
from pytest_diffperf.judging.abscenario import (
    SCENARIO_VERDICT,
    design_for,
    measured,
    measurement,
    memory_checks,
    pair_samples,
    run_noise,
)
from pytest_diffperf.perf.limits import JudgeRules, get_preset
from pytest_diffperf.perf.schema import Tolerances
from pytest_diffperf.protocol import MemorySnapshot, PerfRecord, StageRecord
from pytest_diffperf.results.merge import scenario_of
from pytest_diffperf.results.model import ABMetricRecord, ABRecord, ScenarioResult
from pytest_diffperf.serving.abservers import PairRun
from pytest_diffperf.serving.client import Output
from pytest_diffperf.serving.measure import Sample
from pytest_diffperf.verdicts.abstats import analyse
from pytest_diffperf.verdicts.design import ABDesign

TOL = Tolerances(e2e=0.1, denoise_stage=0.1, non_denoise_stage=0.5, denoise_step=0.5, denoise_agg=0.1, host_anon=0.1)


def record(i: int, denoise_ms: float, host_mb: float = 500.0, flagged: str | None = None) -> PerfRecord:
    stages = [StageRecord(name="TextEncodingStage", execution_time_ms=10.0)]
    flag = {"is_denoising": True} if flagged else {}  # unflagged: denoising by its name, as SGLang reads it
    stages.append(StageRecord(name=flagged or "DenoisingStage", execution_time_ms=denoise_ms, **flag))
    stages.append(StageRecord(name="DecodingStage", execution_time_ms=100.0))
    return PerfRecord(
        request_id=f"r{i}",
        stages=stages,
        steps=[denoise_ms / 4] * 4,
        total_duration_ms=denoise_ms + 120.0,
        memory_snapshots={"runtime_peak": MemorySnapshot(peak_host_anon_mb=host_mb)},
    )


def sample(i: int, rec: PerfRecord) -> Sample:
    return Sample(i, Output(rec.request_id, "image", b"", "png"), rec, 1.0)


def pair_run(index: int, base_ms: list[float], cand_ms: list[float], **kw) -> PairRun:
    return PairRun(
        index,
        {
            "base": [sample(j, record(j, ms)) for j, ms in enumerate(base_ms)],
            "candidate": [sample(j, record(j, ms, **kw)) for j, ms in enumerate(cand_ms)],
        },
        {"base": 8000.0, "candidate": 8400.0},
        [],
    )


def test_pair_samples_read_the_records_as_the_statistics_do():
    samples = pair_samples(pair_run(0, [200.0, 210.0], [300.0, 310.0]))
    assert [r["e2e"] for r in samples.base] == [320.0, 330.0]
    assert samples.candidate[0]["stage[DenoisingStage]"] == 300.0
    assert samples.candidate[0]["avg_denoise"] == 75.0
    assert (samples.base_load_ms, samples.candidate_load_ms) == (8000.0, 8400.0)
    assert samples.denoising == frozenset({"DenoisingStage"})
    flagged = pair_samples(pair_run(0, [200.0], [300.0], flagged="DmdDenoisingStage"))
    assert flagged.denoising == frozenset({"DenoisingStage", "DmdDenoisingStage"})  # the records' flags decide


def test_a_flagged_denoising_stage_is_gated():
    pairs = [pair_samples(pair_run(i, [200.0] * 4, [400.0] * 4, flagged="DmdDenoisingStage")) for i in range(2)]
    result = analyse(pairs, ABDesign())
    assert result.metrics["stage[DmdDenoisingStage]"].gated


def test_memory_is_checked_against_the_base_deterministically():
    case = Case(id="s", model="tiny/flux-t2i", task="text-to-image", prompt="p")
    runs = [pair_run(0, [200.0] * 3, [200.0] * 3, host_mb=900.0)]
    base, cand = measurement(runs, "base", case), measurement(runs, "candidate", case)
    assert list(base.load_ms) == [8000.0]
    rules = JudgeRules(TOL, get_preset("sglang"), (0.0, 1.0))
    checks = memory_checks(base, cand, rules)
    by_name = {c.check.name: c for c in checks}
    assert by_name["runtime_peak_host_anon_mb"].verdict == "fail"  # 900 > max(500 * 1.1, 500 + 256)
    assert all(c.check.unit == "MiB" for c in checks)
    same = measurement([pair_run(0, [200.0] * 3, [200.0] * 3)], "candidate", case)
    assert {c.verdict for c in memory_checks(base, same, rules)} == {"pass"}


def test_the_runs_own_noise_needs_two_process_pairs():
    rng = np.random.default_rng(0)
    pairs = [
        pair_samples(pair_run(i, list(200 * rng.lognormal(0, 0.05, 6)), list(200 * rng.lognormal(0, 0.05, 6))))
        for i in range(3)
    ]
    assert run_noise(pairs[:1], "e2e") is None
    estimate = run_noise(pairs, "e2e")
    assert estimate is not None and estimate.process_pairs == 3 and estimate.request_pairs == 18
    assert 0 < estimate.within < 0.1
    load = run_noise(pairs, "load")
    assert load is not None and load.within == 0.0  # one ratio per process pair, all log(8400 / 8000)
    assert load.offset_sd == pytest.approx(0.0)


def test_verdicts_map_onto_the_scenario_and_the_record_survives_json():
    assert SCENARIO_VERDICT == {
        "regressed": "fail",
        "improved": "pass",
        "unchanged": "pass",
        "inconclusive": "inconclusive",
    }
    pairs = [pair_samples(pair_run(i, [200.0] * 4, [400.0] * 4)) for i in range(2)]
    ab = analyse(pairs, ABDesign())
    figures = measured(ab, 12.345)
    assert figures["ab_requests"] == 16.0 and figures["ab_wall_s"] == 12.35
    assert figures["e2e_ratio"] == pytest.approx(520 / 320, rel=1e-3)
    metric = ABMetricRecord(
        name="stage[X]", gated=False, tolerance=0.5, ratio=None, low=None, high=None, verdict="inconclusive",
        base_ms=None, candidate_ms=None, process_pairs=0, request_pairs=0,
    )  # fmt: skip
    record = ABRecord(
        verdict="inconclusive", headline="inconclusive: ...", base="current", candidate="args=--x", process_pairs=1,
        requests=8, wall_s=1.0, stop="budget", metrics=[metric],
    )  # fmt: skip
    result = ScenarioResult(scenario="s", verdict="inconclusive", ab=record)
    again = ScenarioResult.model_validate_json(result.model_dump_json())
    assert again == result and again.outcome == "inconclusive"
    assert scenario_of(result.document(), "results.json", "scenarios.0") == result  # type: ignore[arg-type]


def test_design_seeds_differ_by_scenario_and_repeat():
    d = ABDesign()
    assert design_for(d, "a") == design_for(d, "a")
    assert design_for(d, "a").seed != design_for(d, "b").seed
    assert [design_for(d, "a").orders(i) for i in range(3)] == [design_for(d, "a").orders(i) for i in range(3)]
