"""HTTP API, perf log, load marker and determinism of a real tiny/flux-t2i server."""

from __future__ import annotations

import base64
import io

import psutil
import pytest
import requests
from PIL import Image

from pytest_diffperf.protocol import (
    LOAD_MARKER,
    STANDARD_STAGES,
    parse_load_marker,
)
from tests.support.refserver import SMALL_IMAGE, png_size, stage_ms

pytestmark = pytest.mark.server  # starts server processes


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
    listening = [c for c in psutil.net_connections(kind="inet") if c.status == "LISTEN" and c.laddr.port == flux.port]
    assert [c.laddr.ip for c in listening] == ["127.0.0.1"]  # whichever process serves (a forked one too)


def test_models_lists_only_the_served_model_card(flux):
    data = requests.get(flux.url + "/v1/models", timeout=5).json()["data"]
    assert [m["id"] for m in data] == ["tiny/flux-t2i"]
    card = data[0]
    assert card["object"] == "model"
    assert (card["num_gpus"], card["task_type"], card["pipeline_class"]) == (1, "T2I", "FluxPipeline")
    assert {"dit_precision", "vae_precision", "supported_task_types", "root", "owned_by"} <= set(card)
    assert requests.get(flux.url + "/v1/models/tiny/flux-t2i", timeout=5).json() == card
    missing = requests.get(flux.url + "/v1/models/nope", timeout=5)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "model_not_found"


@pytest.mark.parametrize("path", ["/liveness", "/health_generate", "/server_info", "/model_info", "/models"])
def test_info_routes(flux, path):
    resp = requests.get(flux.url + path, timeout=5)
    assert resp.status_code == 200
    assert resp.json()


def test_default_format_is_jpeg_as_sglangs(flux):
    _, data = flux.image(**SMALL_IMAGE)
    assert data[:3] == b"\xff\xd8\xff"
    _, data = flux.image(**SMALL_IMAGE, output_format=None)  # what openai 2.8.0 sends by default
    assert data[:3] == b"\xff\xd8\xff"


def test_png_of_requested_size(flux):
    payload, png = flux.image(**{**SMALL_IMAGE, "size": "192x128", "output_format": "png"})
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert png_size(png) == (192, 128)
    assert set(payload) >= {"id", "created", "data"}


def test_jpeg_output_format(flux):
    _, jpeg = flux.image(**SMALL_IMAGE, output_format="jpeg")
    with Image.open(io.BytesIO(jpeg)) as img:
        assert img.format == "JPEG" and img.size == (128, 128)


def test_n_images_seed_lists_and_empty_size(flux):
    resp = flux.post("/v1/images/generations", {**SMALL_IMAGE, "n": 2})
    assert resp.status_code == 200
    first = [d["b64_json"] for d in resp.json()["data"]]
    assert len(set(first)) == 2
    listed = flux.post("/v1/images/generations", {**SMALL_IMAGE, "seed": [7, 8], "n": 2}).json()
    assert [d["b64_json"] for d in listed["data"]] == first  # an int seed s seeds output i with s + i
    clamped = flux.post("/v1/images/generations", {**SMALL_IMAGE, "size": "64x64", "n": 0})
    assert len(clamped.json()["data"]) == 1  # n is clamped to [1, 10], as SGLang does
    default = flux.post("/v1/images/generations", {**SMALL_IMAGE, "size": "", "num_inference_steps": 1})
    assert png_size(base64.b64decode(default.json()["data"][0]["b64_json"])) == (256, 256)


def test_perf_record_per_request(flux):
    payload, _ = flux.image(**{**SMALL_IMAGE, "num_inference_steps": 5})
    record = flux.record(payload["id"])
    assert record.tag == "pipeline_stage_metrics"
    assert [s.name for s in record.stages] == list(STANDARD_STAGES)
    assert [s.name for s in record.stages if s.is_denoising] == ["DenoisingStage"]
    assert len(record.steps) == 5 and all(ms > 0 for ms in record.steps)
    assert sum(s.execution_time_ms for s in record.stages) <= record.total_duration_ms
    assert sum(record.steps) <= stage_ms(record)["DenoisingStage"]
    assert record.memory_snapshots == {}  # SGLang writes them only on a device
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
    ({"prompt": "x", "size": "abc"}, 400, "size must be formatted as positive WIDTHxHEIGHT"),
    ({"prompt": "x", "size": "250x256"}, 400, "width must be a multiple of 16"),
    ({"prompt": "x", "size": "8192x8192"}, 400, "width must be a multiple of 16"),
    ({"prompt": "x", "num_inference_steps": -3}, 400, "num_inference_steps must be positive"),
    ({"prompt": "x", "seed": [1, 2, 3], "n": 2}, 400, "seed list has 3 entries for n=2 outputs"),
    ({"prompt": "x", "response_format": "url"}, 400, "response_format='url' requires cloud storage"),
    ({"prompt": "x", "response_format": "gif"}, 400, "response_format=gif is not supported"),
    # a difference from SGLang: no path a request names is written (or read) unless --request-files-dir allows it
    (
        {"prompt": "x", "perf_dump_path": "/tmp/diffperf-x.json"},
        400,
        "perf_dump_path: file paths in requests are refused",
    ),
]


@pytest.mark.parametrize(("body", "status", "detail"), BAD_REQUESTS)
def test_bad_image_requests_answer_detail(flux, body, status, detail):
    resp = flux.post("/v1/images/generations", body, timeout=30)
    assert resp.status_code == status, resp.text
    assert detail in resp.json()["detail"]


@pytest.mark.parametrize("body", [{"size": "128x128"}, {"prompt": ["x"]}])
def test_invalid_bodies_are_422(flux, body):
    resp = flux.post("/v1/images/generations", body, timeout=30)
    assert resp.status_code == 422
    assert isinstance(resp.json()["detail"], list)


def test_malformed_json_is_422(flux):
    resp = requests.post(
        flux.url + "/v1/images/generations",
        data=b'{"prompt": "x",',
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert resp.status_code == 422
    assert resp.json()["detail"][0]["type"] == "json_invalid"


def test_video_on_image_model_is_400(flux):
    resp = flux.post("/v1/videos", {"prompt": "x"}, timeout=30)
    assert resp.status_code == 400
    assert "use /v1/images/generations" in resp.json()["detail"]


def test_lora_and_mesh_answer_as_unsupported(flux):
    resp = flux.post("/v1/set_lora", {"lora_nickname": "a", "lora_path": "b"}, timeout=30)
    assert resp.status_code == 500
    assert resp.json()["detail"].startswith("Failed to set LoRA adapter: ")
    assert flux.post("/v1/meshes", {}, timeout=30).status_code == 400
    assert flux.post("/v1/actions/generations", {}, timeout=30).status_code == 404


@pytest.mark.parametrize(
    ("path", "detail"),
    [
        ("/v1/videos/unknown", "Video not found"),
        ("/v1/videos/unknown/content", "Video not found"),
        ("/v1/nothing", "Not Found"),
    ],
)
def test_unknown_ids_and_paths_are_404(flux, path, detail):
    resp = requests.get(flux.url + path, timeout=30)
    assert resp.status_code == 404
    assert resp.json() == {"detail": detail}


def test_still_healthy_after_bad_inputs(flux):
    assert requests.get(flux.url + "/health", timeout=5).status_code == 200
    assert flux.proc.poll() is None
