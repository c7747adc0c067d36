"""HTTP API, perf log, load marker and determinism of a real tiny/flux-t2i server."""

from __future__ import annotations

import io

import psutil
import pytest
import requests
from PIL import Image

from pytest_diffperf.protocol import (
    LOAD_MARKER,
    MEMORY_SNAPSHOT_KEYS,
    STANDARD_STAGES,
    parse_load_marker,
)

from .refserver_helpers import SMALL_IMAGE, png_size, stage_ms


def test_health_503_until_ready_then_200(flux):
    assert 503 in flux.health_seen
    assert flux.health_seen[-1] == 200
    assert flux.health_seen.index(503) < flux.health_seen.index(200)
    assert requests.get(flux.url + "/health", timeout=5).status_code == 200


def test_load_marker_printed_once_after_spawn(flux):
    lines = [line for line in flux.stdout_path.read_text().splitlines() if LOAD_MARKER in line]
    assert len(lines) == 1
    marker_ns = parse_load_marker(lines[0])
    assert marker_ns is not None
    # --inject-load-delay 1000 sleeps before the marker; same monotonic clock across processes.
    assert marker_ns - flux.spawn_ns >= 1000 * 1e6
    assert f"http://127.0.0.1:{flux.port}" in flux.stdout_path.read_text()


def test_default_bind_is_loopback_only(flux):
    listening = [c for c in psutil.Process(flux.proc.pid).net_connections(kind="inet") if c.status == "LISTEN"]
    assert [(c.laddr.ip, c.laddr.port) for c in listening] == [("127.0.0.1", flux.port)]


def test_models_lists_builtin_models_served_first(flux):
    data = requests.get(flux.url + "/v1/models", timeout=5).json()["data"]
    assert data[0]["id"] == "tiny/flux-t2i" and data[0]["served"]
    assert {"tiny/flux-t2i", "tiny/sd-t2i", "tiny/wan-t2v"} <= {m["id"] for m in data}


def test_png_of_requested_size(flux):
    payload, png = flux.image(**{**SMALL_IMAGE, "size": "192x128"})
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png_size(png) == (192, 128)
    assert set(payload) >= {"id", "created", "data"}


def test_jpeg_output_format(flux):
    _, jpeg = flux.image(**SMALL_IMAGE, output_format="jpeg")
    with Image.open(io.BytesIO(jpeg)) as img:
        assert img.format == "JPEG" and img.size == (128, 128)


def test_n_images(flux):
    resp = flux.post("/v1/images/generations", {**SMALL_IMAGE, "n": 2})
    assert resp.status_code == 200
    assert len(resp.json()["data"]) == 2


def test_perf_record_per_request(flux):
    payload, _ = flux.image(**{**SMALL_IMAGE, "num_inference_steps": 5})
    record = flux.record(payload["id"])
    assert record.tag == "pipeline_stage_metrics"
    assert [s.name for s in record.stages] == list(STANDARD_STAGES)
    assert [s.name for s in record.stages if s.is_denoising] == ["DenoisingStage"]
    assert len(record.steps) == 5 and all(ms > 0 for ms in record.steps)
    assert sum(s.execution_time_ms for s in record.stages) <= record.total_duration_ms
    assert sum(record.steps) <= stage_ms(record)["DenoisingStage"]
    assert set(record.memory_snapshots) == set(MEMORY_SNAPSHOT_KEYS)
    for snap in record.memory_snapshots.values():
        assert snap.peak_host_anon_mb > 0 and snap.allocated_mb == 0
    assert record.timestamp.endswith("+00:00")


def test_warmup_is_not_logged(flux):
    ids = {r.request_id for r in flux.records()}
    before = len(flux.records())
    payload, _ = flux.image(**SMALL_IMAGE)
    assert len(flux.records()) == before + 1
    assert payload["id"] not in ids


def test_deterministic_within_process(flux):
    _, first = flux.image(**SMALL_IMAGE)
    _, second = flux.image(**SMALL_IMAGE)
    _, other_seed = flux.image(**{**SMALL_IMAGE, "seed": 8})
    _, other_prompt = flux.image(**{**SMALL_IMAGE, "prompt": "a blue whale"})
    assert first == second
    assert len({first, other_seed, other_prompt}) == 3


BAD_REQUESTS = [
    ({"prompt": "x", "model": "tiny/nope"}, "model_not_found"),
    ({"prompt": "x", "size": "abc"}, "invalid_parameter"),
    ({"prompt": "x", "size": "250x256"}, "invalid_parameter"),
    ({"prompt": "x", "size": "8192x8192"}, "invalid_parameter"),
    ({"prompt": "x", "num_inference_steps": -3}, "invalid_request"),
    ({"prompt": "x", "n": 0}, "invalid_request"),
    ({"prompt": "x", "seed": -1}, "invalid_request"),
    ({"prompt": "x", "response_format": "url"}, "unsupported_response_format"),
    ({"prompt": "x", "output_format": "gif"}, "invalid_request"),
    ({"size": "128x128"}, "invalid_request"),
    ({"prompt": ""}, "invalid_request"),
]


@pytest.mark.parametrize(("body", "code"), BAD_REQUESTS)
def test_bad_image_requests_are_400(flux, body, code):
    resp = flux.post("/v1/images/generations", body, timeout=30)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and error["message"] and error["type"] == "invalid_request_error"


def test_malformed_json_is_400(flux):
    resp = requests.post(
        flux.url + "/v1/images/generations",
        data=b'{"prompt": "x",',
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert resp.status_code == 400
    assert resp.json()["error"]["code"] == "invalid_json"


def test_video_on_image_model_is_400(flux):
    resp = flux.post("/v1/videos", {"prompt": "x"}, timeout=30)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "unsupported_task"


@pytest.mark.parametrize(
    "path",
    ["/v1/videos/video_unknown", "/v1/videos/video_unknown/content", "/v1/nothing"],
)
def test_unknown_ids_and_paths_are_404(flux, path):
    resp = requests.get(flux.url + path, timeout=30)
    assert resp.status_code == 404
    assert set(resp.json()["error"]) == {"message", "type", "code"}


def test_still_healthy_after_bad_inputs(flux):
    assert requests.get(flux.url + "/health", timeout=5).status_code == 200
    assert flux.proc.poll() is None
