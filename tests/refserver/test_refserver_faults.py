"""Fault injection on real servers, compared against the baseline tiny/flux-t2i server.

Timing assertions only concern injected delays, with wide margins: requests vary ~13% and a fresh
process can run ~1.4x slower, so non-injected figures are only checked against loose bounds.
"""

from __future__ import annotations

import contextlib
import statistics
import time

import pytest
import requests

from pytest_diffperf.refserver.faults import Faults, parse_delay
from tests.support.refserver import SMALL_IMAGE, stage_ms

pytestmark = pytest.mark.server  # starts server processes

REPEATS = 5


def _median_records(server, body):
    """Run ``body`` REPEATS times; per-stage and per-step medians, plus the output bytes."""
    records, outputs = [], set()
    for _ in range(REPEATS):
        payload, data = server.image(**body)
        records.append(server.record(payload["id"]))
        outputs.add(data)
    stages = {name: statistics.median(stage_ms(r)[name] for r in records) for name in stage_ms(records[0])}
    steps = [statistics.median(r.steps[i] for r in records) for i in range(len(records[0].steps))]
    outside = statistics.median(stage_ms(r)["DenoisingStage"] - sum(r.steps) for r in records)
    return stages, steps, outside, outputs


@pytest.fixture(scope="module")
def delayed(start_server):
    return start_server(
        "tiny/flux-t2i",
        "--inject-delay",
        "DenoisingStage=200",
        "--inject-delay",
        "step:2=150",
    )


def test_delays_land_in_their_stage_and_step_only(flux, delayed):
    base_stages, base_steps, base_outside, base_out = _median_records(flux, SMALL_IMAGE)
    stages, steps, outside, out = _median_records(delayed, SMALL_IMAGE)

    # DenoisingStage=200: in the stage, outside its steps.
    assert outside - base_outside >= 180, (outside, base_outside)
    assert stages["DenoisingStage"] - base_stages["DenoisingStage"] >= 250, (
        stages,
        base_stages,
    )
    # step:2=150: in steps[2] only.
    assert steps[2] - base_steps[2] >= 135, (steps, base_steps)
    for i in (0, 1, 3):
        assert steps[i] - base_steps[i] < 100, (i, steps, base_steps)
    for name in (
        "InputValidationStage",
        "TextEncodingStage",
        "LatentPreparationStage",
        "TimestepPreparationStage",
        "DecodingStage",
    ):
        assert stages[name] - base_stages[name] < 100, (name, stages, base_stages)

    # Deterministic within each process and across the two processes: delays never touch pixels.
    assert len(base_out) == 1 and out == base_out


def test_output_noise_changes_outputs_deterministically_and_jitter_keeps_records_valid(flux, start_server):
    noisy = start_server("tiny/flux-t2i", "--inject-output-noise", "0.1", "--inject-jitter", "50")
    _, clean = flux.image(**SMALL_IMAGE)
    first_payload, first = noisy.image(**SMALL_IMAGE)
    _, second = noisy.image(**SMALL_IMAGE)
    assert first == second != clean
    record = noisy.record(first_payload["id"])
    assert sum(s.execution_time_ms for s in record.stages) <= record.total_duration_ms
    assert len(record.steps) == SMALL_IMAGE["num_inference_steps"]
    noisy.stop()


def test_crash_on_request_exits_the_process(start_server):
    server = start_server("tiny/sd-t2i", "--inject-crash-on-request", "2")
    _, png = server.image(**SMALL_IMAGE)
    assert png[:3] == b"\xff\xd8\xff"  # JPEG, the default
    with pytest.raises(requests.ConnectionError):
        server.post("/v1/images/generations", SMALL_IMAGE, timeout=60)
    assert server.wait_exit(timeout=30) == 1
    assert "injected crash on request 2" in server.output()
    assert len(server.records()) == 1


def test_hang_on_request_times_out_while_health_answers(start_server):
    server = start_server("tiny/flux-t2i", "--inject-hang-on-request", "1")
    with pytest.raises(requests.Timeout):
        server.post("/v1/images/generations", SMALL_IMAGE, timeout=2)  # never answered: any timeout expires
    assert requests.get(server.url + "/health", timeout=5).status_code == 200
    assert server.proc.poll() is None
    assert server.records() == []
    server.stop()


def test_fail_startup_exits_nonzero_before_ready(start_server):
    server = start_server("tiny/flux-t2i", "--inject-fail-startup", wait=False)
    seen = []
    deadline = time.monotonic() + 60
    while server.proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(requests.ConnectionError):
            seen.append(requests.get(server.url + "/health", timeout=2).status_code)
        time.sleep(0.05)
    assert server.wait_exit(timeout=5) != 0
    assert 200 not in seen
    assert "injected startup failure" in server.output()


def test_parse_delay():
    assert parse_delay("DecodingStage=12.5") == ("DecodingStage", 12.5)
    assert parse_delay("step:03=100") == ("step:3", 100.0)
    for bad in (
        "DecodingStage",
        "Nope=1",
        "step:x=1",
        "step:1=abc",
        "TextEncodingStage=-5",
    ):
        with pytest.raises(ValueError):
            parse_delay(bad)


def test_jitter_sleeps_at_most_pct_of_stage_time():
    faults = Faults(jitter_pct=50, seed=3)
    extras = []
    for _ in range(5):
        t0 = time.perf_counter()
        faults.after_stage("DecodingStage", 0.1)
        extras.append(time.perf_counter() - t0)
    assert all(e <= 0.05 + 0.02 for e in extras)
    assert sum(extras) > 0.01  # a uniform draw in [0, 50 ms], five times
    t0 = time.perf_counter()
    Faults().after_stage("DecodingStage", 0.1)
    assert time.perf_counter() - t0 < 0.005
