"""Video jobs on a real tiny/wan-t2v server: async lifecycle, MP4 content, perf records."""

from __future__ import annotations

import imageio.v3 as iio
import pytest
import requests

pytestmark = pytest.mark.server  # starts server processes

SMALL_VIDEO = {
    "prompt": "waves rolling onto a beach",
    "size": "96x64",
    "num_frames": 5,
    "num_inference_steps": 3,
    "seed": 11,
    "fps": 8,
}


@pytest.fixture(scope="module")
def wan(start_server):
    return start_server(
        "tiny/wan-t2v",
        "--warmup-sampling-params",
        '{"size": "64x64", "num_frames": 5, "num_inference_steps": 1}',
    )


def _frames(data: bytes, tmp_path) -> list:
    return list(iio.imread(data, index=None, plugin="pyav"))  # PyAV, as the plugin's client decodes


def test_video_job_lifecycle_and_mp4(wan, tmp_path):
    job, progress = wan.video(**SMALL_VIDEO)
    assert job["status"] == "completed" and job["object"] == "video"
    assert progress[0] == 0 and progress[-1] == 100
    assert progress == sorted(progress)
    resp = requests.get(f"{wan.url}/v1/videos/{job['id']}/content", timeout=30)
    assert resp.status_code == 200 and resp.headers["content-type"] == "video/mp4"
    frames = _frames(resp.content, tmp_path)
    assert len(frames) == 5
    assert all(f.shape == (64, 96, 3) for f in frames)

    record = wan.record(job["id"])
    assert len(record.steps) == 3
    assert sum(s.execution_time_ms for s in record.stages) <= record.total_duration_ms

    listed = requests.get(f"{wan.url}/v1/videos", timeout=10).json()["data"]
    assert job["id"] in {item["id"] for item in listed}


def test_create_returns_queued_and_content_404_until_done(wan):
    first = wan.post("/v1/videos", SMALL_VIDEO).json()
    second = wan.post("/v1/videos", SMALL_VIDEO).json()
    assert first["status"] == second["status"] == "queued"
    assert set(second) >= {
        "id",
        "object",
        "status",
        "progress",
        "created_at",
        "size",
        "seconds",
    }
    # The second job waits behind the first on the single worker.
    resp = requests.get(f"{wan.url}/v1/videos/{second['id']}/content", timeout=10)
    assert resp.status_code == 404
    assert resp.json() == {"detail": "Generation is still in-progress"}
    listed = requests.get(f"{wan.url}/v1/videos?limit=1", timeout=10).json()
    assert [item["id"] for item in listed["data"]] == [second["id"]]  # newest first, paged
    assert listed["has_more"] is True


def test_frame_counts_are_adjusted_not_rejected(wan, tmp_path):
    body = {k: v for k, v in SMALL_VIDEO.items() if k != "num_frames"}
    job, _ = wan.video(**body, seconds="1")  # fps 8 x 1 s = 8 frames, run as 9 (4k+1)
    data = requests.get(f"{wan.url}/v1/videos/{job['id']}/content", timeout=30).content
    assert len(_frames(data, tmp_path)) == 9
    job, _ = wan.video(**{**SMALL_VIDEO, "num_frames": 6})
    data = requests.get(f"{wan.url}/v1/videos/{job['id']}/content", timeout=30).content
    assert len(_frames(data, tmp_path)) == 5


def test_video_deterministic(wan):
    contents = []
    for _ in range(2):
        job, _ = wan.video(**SMALL_VIDEO)
        contents.append(requests.get(f"{wan.url}/v1/videos/{job['id']}/content", timeout=30).content)
    assert contents[0] == contents[1]


@pytest.mark.parametrize(
    ("extra", "x264_options"),
    [
        ({}, [b"rc=crf", b"crf=25.0"]),  # SGLang's default: output_quality "default", compression 50, quality 5
        ({"output_quality": "high"}, [b"rc=crf", b"crf=5.0"]),  # 90 -> quality 9
        ({"output_compression": 100}, [b"rc=cqp", b" qp=0"]),  # quality 10: CRF 0, which x264 encodes lossless
        ({"output_quality": "low", "output_compression": 100}, [b"rc=cqp", b" qp=0"]),  # compression wins
    ],
)
def test_video_quality_follows_sglangs_output_compression(wan, extra, x264_options):
    """The MP4's encoder settings, as x264 records them in the stream, follow SGLang's mapping
    (``imageio`` quality ``compression / 10``, CRF ``int((1 - quality / 10) * 51)``)."""
    job, _ = wan.video(**SMALL_VIDEO, **extra)
    data = requests.get(f"{wan.url}/v1/videos/{job['id']}/content", timeout=30).content
    assert all(option in data for option in x264_options), data[:2000]


def test_video_quality_errors_as_sglangs(wan):
    resp = wan.post("/v1/videos", {**SMALL_VIDEO, "output_quality": "best"}, timeout=30)
    assert resp.status_code == 400
    expected = "Invalid output_quality 'best'. Expected one of: ['maximum', 'high', 'medium', 'low', 'default']"
    assert resp.json()["detail"] == expected
    job, _ = wan.video(**SMALL_VIDEO, output_compression=5)  # imageio's quality 0.5: below its range of 1-10
    assert job["status"] == "failed" and "quality must be between 1 and 10" in job["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        {**SMALL_VIDEO, "size": "100x64"},
        {**SMALL_VIDEO, "num_inference_steps": 0},
        {**SMALL_VIDEO, "num_frames": 1000},
        {"size": "64x64"},
        {**SMALL_VIDEO, "input_reference": "dummy"},
    ],
)
def test_bad_video_requests_are_400_with_detail(wan, body):
    resp = wan.post("/v1/videos", body, timeout=30)
    assert resp.status_code == 400
    assert isinstance(resp.json()["detail"], str)


def test_multipart_video_and_delete(wan, tmp_path):
    fields = {k: (None, str(v)) for k, v in SMALL_VIDEO.items()}
    resp = requests.post(f"{wan.url}/v1/videos", files=fields, timeout=30)
    assert resp.status_code == 200, resp.text
    job_id = resp.json()["id"]
    deleted = requests.delete(f"{wan.url}/v1/videos/{job_id}", timeout=30).json()
    assert deleted["status"] == "deleted"
    assert requests.get(f"{wan.url}/v1/videos/{job_id}", timeout=30).status_code == 404


def test_image_on_video_model_is_400(wan):
    resp = wan.post("/v1/images/generations", {"prompt": "x"}, timeout=30)
    assert resp.status_code == 400
