"""Metric names, per-request metrics from perf-log records, and the policy's spec per metric."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.protocol import PerfRecord
from pytest_diffperf.verdicts.abstats import judge_ab_metrics
from pytest_diffperf.verdicts.design import ABDesign
from pytest_diffperf.verdicts.metrics import (
    BUSY_NOISE,
    SEQUENTIAL_NOISE,
    MetricSpec,
    VerdictPolicy,
    busy_machine,
    one_at_a_time,
    record_metrics,
    stage_of,
)
from pytest_diffperf.verdicts.noise import Noise
from pytest_diffperf.verdicts.vocab import VERDICTS


def test_stage_of():
    assert stage_of("stage[DenoisingStage]") == "DenoisingStage"
    assert stage_of("e2e") is None
    assert stage_of("step[3]") is None


def test_record_metrics_reads_a_perf_log_record():
    record = PerfRecord.model_validate(
        {
            "request_id": "r1",
            "stages": [
                {"name": "TextEncodingStage", "execution_time_ms": 9.0},
                {"name": "DenoisingStage", "execution_time_ms": 300.0},
                {"name": "DenoisingStage", "execution_time_ms": 310.0},
            ],
            "steps": [10.0, 20.0, 60.0],
            "total_duration_ms": 400.0,
        }
    )
    m = record_metrics(record)
    assert m == {
        "e2e": 400.0,
        "stage[TextEncodingStage]": 9.0,
        "stage[DenoisingStage]": 310.0,  # logged twice: the last time, as the limit engine reads it
        "avg_denoise": 30.0,
        "median_denoise": 20.0,
    }
    assert record_metrics(record, e2e_ms=420.0)["e2e"] == 420.0


def test_policy_routes_metrics():
    p = VerdictPolicy()
    assert p.spec("e2e") is p.e2e
    assert p.e2e.gated
    assert p.spec("stage[DenoisingStage]") is p.denoising_stage
    assert p.denoising_stage.gated
    assert p.spec("stage[MyDenoise]", denoising={"MyDenoise"}) is p.denoising_stage
    assert p.spec("stage[DecodingStage]") is p.stage
    assert not p.stage.gated
    assert p.spec("median_denoise") is p.denoise_agg
    assert p.spec("load") is p.load
    special = MetricSpec("stage", 1.5, Noise(0.1, 0.1), weight=0.1)
    assert VerdictPolicy(overrides={"stage[DecodingStage]": special}).spec("stage[DecodingStage]") is special
    with pytest.raises(ValueError, match="unknown metric 'bogus'"):
        p.spec("bogus")


def test_spec_errors():
    with pytest.raises(DiffperfError, match="e2e metric: weight: expected a weight >= 0, got -1"):
        MetricSpec("e2e", 0.1, Noise(0.04, 0.09), weight=-1)
    with pytest.raises(DiffperfError, match="stage metric: floor: expected 0 <= floor < tolerance"):
        MetricSpec("stage", 0.1, Noise(0.04, 0.09), floor=0.2)


def test_one_at_a_time_priors_widen_what_side_by_side_priors_call_a_change():
    """CI's A/A run one at a time: both process pairs' single request pairs came out 14 % and 26 % faster.
    Side-by-side priors call that improved; the priors of servers run one after the other do not."""
    d = {"e2e": np.log(np.array([[0.86], [0.74]]))}
    design = ABDesign(request_pairs=1, max_process_pairs=2, max_requests=4)
    policy = VerdictPolicy()
    sequential = one_at_a_time(policy)
    assert VERDICTS[int(judge_ab_metrics(d, policy, design).scenario)] == "improved"
    assert VERDICTS[int(judge_ab_metrics(d, sequential, design).scenario)] == "inconclusive"
    assert sequential.e2e.noise == sequential.denoising_stage.noise == SEQUENTIAL_NOISE
    assert (sequential.e2e.tolerance, sequential.e2e.weight) == (policy.e2e.tolerance, policy.e2e.weight)
    assert sequential.load == policy.load  # a fresh process loads alike in both modes


def test_a_busy_machine_widens_every_prior_and_keeps_its_weight():
    override = MetricSpec("stage", 0.2, Noise(0.05, 0.1, between_weight=4.0), weight=0.5)
    policy = VerdictPolicy(overrides={"stage[DecodingStage]": override})
    wide = busy_machine(policy)
    for name in (
        "e2e",
        "load",
        "avg_denoise",
        "stage[DenoisingStage]",
        "stage[TextEncodingStage]",
        "stage[DecodingStage]",
    ):
        before, after = policy.spec(name), wide.spec(name)
        assert after.noise.between == pytest.approx(BUSY_NOISE * before.noise.between), name
        assert after.noise.within == pytest.approx(BUSY_NOISE * before.noise.within), name
        assert (after.noise.between_weight, after.noise.within_weight) == (
            before.noise.between_weight,
            before.noise.within_weight,
        )
        assert (after.tolerance, after.weight, after.floor) == (before.tolerance, before.weight, before.floor)
    assert (wide.alpha, wide.spending) == (policy.alpha, policy.spending)
