"""The client's request fields, output checks, reference downloads and video statuses, as SGLang's harness has them."""

from __future__ import annotations

import functools
import io
import json
import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import imageio.v3 as iio
import numpy as np
import pytest
from PIL import Image

from pytest_diffperf._util import tempdirs
from pytest_diffperf.cases import Case
from pytest_diffperf.serving import client
from pytest_diffperf.serving.client import InputError, Output, RequestError


def video_case(task="text-to-video", **changes) -> Case:
    return Case(**{"id": "v", "model": "m", "task": task, "prompt": "p", **changes})


def png(width: int, height: int, fmt: str = "PNG") -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.zeros((height, width, 3), np.uint8)).save(buf, format=fmt)
    return buf.getvalue()


@functools.cache
def mp4(frames: int, size: int = 16) -> bytes:
    return iio.imwrite("<bytes>", np.zeros((frames, size, size, 3), np.uint8), extension=".mp4", fps=8)


def test_video_bodies_carry_seconds_and_fps_only_for_image_to_video():
    assert client.request_body(video_case(seconds=1, num_frames=9, fps=16)) == {
        "model": "m", "prompt": "p", "seconds": 1, "num_frames": 9
    }  # fmt: skip
    for task in ("image-to-video", "text-image-to-video"):
        assert client.request_body(video_case(task, seconds=4, fps=16))["fps"] == 16
    assert client.request_body(video_case(sglang_request_extra={"size": ""}))["size"] == ""


def test_image_extension_comes_from_the_bytes_and_an_asked_format_must_match():
    assert client.image_extension(png(4, 4)) == "png"
    assert client.image_extension(png(4, 4, "JPEG")) == "jpg"
    assert client.image_extension(png(4, 4, "WEBP")) == "webp"
    assert client.image_extension(b"GIF89a......") is None


def test_size_is_checked_times_the_upscaling_scale_and_frames_only_with_interpolation():
    image = Case(id="i", model="m", task="text-to-image", prompt="p", width=8, height=4)
    up = image.model_copy(update={"sglang_request_extra": {"enable_upscaling": True, "upscaling_scale": 2}})
    client.check_media(Output("r", "image", png(8, 4), "png"), image)
    client.check_media(Output("r", "image", png(16, 8), "png"), up)
    with pytest.raises(RequestError, match="image is 8x4, expected 16x8"):
        client.check_media(Output("r", "image", png(8, 4), "png"), up)
    default_scale = up.model_copy(update={"sglang_request_extra": {"enable_upscaling": True}})
    assert client.expected_size(default_scale) == (32, 16)  # SGLang's default scale is 4
    edit = up.model_copy(update={"task": "image-edit"})
    assert client.expected_size(edit) == (8, 4)  # SGLang does not scale edits

    video = video_case(width=16, height=16, num_frames=5)
    client.check_media(Output("v", "video", mp4(8), "mp4"), video)  # the server may round frame counts
    interp = video.model_copy(update={"sglang_request_extra": {"enable_frame_interpolation": True}})
    assert client.expected_frame_count(interp) == 9
    with pytest.raises(RequestError, match="video has 8 frames, expected 9 after frame interpolation"):
        client.check_media(Output("v", "video", mp4(8), "mp4"), interp)
    client.check_media(Output("v", "video", mp4(9), "mp4"), interp)


class Served:
    """A one-route HTTP server on 127.0.0.1 for client tests: answers from ``routes``, counts requests."""

    def __init__(self, routes):
        self.routes = routes
        self.hits: list[tuple[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args):
                pass

            def _answer(self):
                outer.hits.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, body = outer.routes(self.command, self.path)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()  # shutdown within 20 ms

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served():
    made = []

    def make(routes):
        made.append(Served(routes))
        return made[-1]

    yield make
    for server in made:
        server.close()


def test_a_url_reference_is_downloaded_once_per_process(served, monkeypatch):
    monkeypatch.setattr(client, "_downloads", {})
    monkeypatch.setattr(client, "_download_dir", None)
    image = png(4, 4, "JPEG")
    server = served(lambda method, path: (200, image))
    first = client.reference_file(f"{server.url}/inputs/cat.jpg")
    again = client.reference_file(f"{server.url}/inputs/cat.jpg")
    assert first == again
    assert first.read_bytes() == image
    assert first.suffix == ".jpg"
    assert server.hits == [("GET", "/inputs/cat.jpg")]
    folder = first.parent  # the process's download folder: the plugin's own, swept once 3 days old
    assert folder.name.startswith("diffperf-inputs-") and tempdirs.is_marked(folder)
    shutil.rmtree(folder)  # the test suite leaves nothing in the temp folder


def test_a_failed_download_is_one_clear_error(served, monkeypatch, tmp_path):
    monkeypatch.setattr(client, "_downloads", {})
    monkeypatch.setattr(time, "sleep", lambda _s: None)
    server = served(lambda method, path: (404, b"gone"))
    with pytest.raises(InputError) as info:
        client.reference_file(f"{server.url}/x.png")
    assert str(info.value) == (
        f"cannot download the reference image {server.url}/x.png (3 attempts; last: HTTP 404); "
        "download it yourself and set reference_image to the local file"
    )
    assert len(server.hits) == 3
    with pytest.raises(InputError, match=r"reference image .*missing\.png is not a file"):
        client.reference_file(str(tmp_path / "missing.png"))


@pytest.mark.parametrize("status", ["failed", "cancelled", "deleted"])
def test_failed_cancelled_and_deleted_video_jobs_end_the_request_at_once(served, monkeypatch, status):
    monkeypatch.setattr(client, "VIDEO_POLL_S", 0.01)

    def routes(method, path):
        state = "queued" if method == "POST" else status
        return 200, json.dumps({"id": "job1", "status": state, "error": None}).encode()

    server = served(routes)
    with pytest.raises(RequestError, match=f"video job job1 ended with status {status}"):
        client.generate(server.url, video_case(), timeout=30)
    assert [m for m, _ in server.hits] == ["POST", "GET"]
