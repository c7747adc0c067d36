"""HTTP client for SGLang's OpenAI-style generation API: build the request, fetch and check the media.

The request is the one SGLang's own harness sends for the case (``test_server_utils.get_generate_fn``);
the output is checked as it checks it: media type, size (times ``upscaling_scale`` when upscaling)
and, with frame interpolation, the frame count.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import requests

from .. import protocol
from .._util import tempdirs
from ..cases import Case
from .process import ServerFailure

if TYPE_CHECKING:
    import numpy as np

VIDEO_POLL_S = 1.0  # as SGLang's harness polls a video job
TERMINAL_FAILURES = ("failed", "cancelled", "deleted")
DOWNLOAD_ATTEMPTS = 3
DOWNLOAD_TIMEOUT_S = 60.0


class RequestError(ServerFailure):
    """The server answered, but not with a valid output for the case."""


class InputError(RequestError):
    """A case's input (a reference image) cannot be had: not the server's fault."""


@dataclass(frozen=True)
class Output:
    request_id: str
    kind: str  # "image" | "video"
    data: bytes
    extension: str

    def frames(self) -> list[np.ndarray]:
        """Decoded uint8 RGB frames (one for an image); numpy, PIL and PyAV load with the first, not the plugin."""
        if self.kind == "image":
            import numpy as np
            from PIL import Image

            return [np.asarray(Image.open(io.BytesIO(self.data)).convert("RGB"))]
        import av

        with av.open(io.BytesIO(self.data)) as container:  # in-process: no ffmpeg pipes, no forced gc.collect()
            return [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]


def request_body(case: Case) -> dict[str, Any]:
    """The body SGLang's tests send for ``case``; ``sglang_request_extra`` merges last, a None deletes.

    Videos carry ``seconds`` and ``num_frames`` when set, ``fps`` only for the image-to-video tasks
    (SGLang never sends it for text-to-video).
    """
    body: dict[str, Any] = {"model": case.model, "prompt": case.prompt}
    if case.width and case.height:
        body["size"] = f"{case.width}x{case.height}"
    if case.is_video:
        optional: tuple[str, ...] = ("seconds", "num_frames", "seed", "num_inference_steps", "guidance_scale")
        optional += ("negative_prompt",) + (() if case.task == "text-to-video" else ("fps",))
    else:
        body.update(n=1, response_format="b64_json")
        optional = ("output_format", "seed", "num_inference_steps", "guidance_scale", "negative_prompt")
    body.update({k: getattr(case, k) for k in optional if getattr(case, k) is not None})
    for key, value in case.sglang_request_extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def endpoint(case: Case) -> str:
    """The path a request for ``case`` is posted to."""
    if case.is_video:
        return protocol.VIDEOS_PATH
    return protocol.IMAGE_EDITS_PATH if case.task == "image-edit" else protocol.IMAGES_PATH


def describe_request(case: Case) -> str:
    """What ``generate`` posts for ``case``, on one line: the path and the JSON body, or the multipart fields as sent
    (strings; JSON for the rest) and the file part's field and reference image (a URL is downloaded when sent)."""
    body = request_body(case)
    if not isinstance(case.reference_image, str):
        return f"POST {endpoint(case)} {json.dumps(body)}"
    fields = {name: value for name, (_filename, value) in multipart_fields(body).items()}
    return f"POST {endpoint(case)} multipart fields {json.dumps(fields)} file {file_field(case)}={case.reference_image}"


def generate(base_url: str, case: Case, timeout: float) -> Output:
    deadline = time.monotonic() + timeout
    output = _video(base_url, case, deadline) if case.is_video else _image(base_url, case, deadline)
    check_media(output, case)
    return output


def multipart_fields(body: dict[str, Any]) -> dict[str, tuple[None, str]]:
    """Form fields of a multipart request: strings as they are, anything else JSON (as SGLang's parsers read it)."""
    return {k: (None, v if isinstance(v, str) else json.dumps(v)) for k, v in body.items()}


def file_field(case: Case) -> str:
    """The multipart field of a case's reference image."""
    return "input_reference" if case.is_video else "image"


def post_arguments(body: dict[str, Any], case: Case, image: Path | None) -> dict[str, Any]:
    """``requests.post``'s arguments for a request: multipart with the reference ``image`` as its file part, else JSON."""
    if image is None:
        return {"json": body}
    files: dict[str, tuple[str | None, str | bytes]] = dict(multipart_fields(body))
    files[file_field(case)] = (image.name, image.read_bytes())
    return {"files": files}


def _post(url: str, body: dict[str, Any], case: Case, deadline: float) -> dict[str, Any]:
    image = reference_file(case.reference_image) if isinstance(case.reference_image, str) else None
    remaining = max(deadline - time.monotonic(), 1.0)
    resp = requests.post(url, **post_arguments(body, case, image), timeout=remaining)
    return _json(resp, url)


_downloads: dict[str, Path] = {}
_downloads_lock = threading.Lock()
_download_dir: Path | None = None


def reference_file(reference: str) -> Path:
    """The local file of a reference image: the path itself, or an http(s) URL downloaded once per process."""
    if urlparse(reference).scheme not in ("http", "https"):
        path = Path(reference)
        if not path.is_file():
            raise InputError(f"reference image {reference} is not a file")
        return path
    with _downloads_lock:
        if reference not in _downloads:
            _downloads[reference] = _download(reference)
        return _downloads[reference]


def _download(url: str) -> Path:
    global _download_dir
    problem = ""
    for attempt in range(DOWNLOAD_ATTEMPTS):
        if attempt:
            time.sleep(2 ** (attempt - 1))
        try:
            resp = requests.get(url, timeout=DOWNLOAD_TIMEOUT_S)
        except requests.RequestException as exc:
            problem = f"{type(exc).__name__}: {exc}"
            continue
        if resp.status_code == 200 and resp.content:
            _download_dir = _download_dir or tempdirs.make("diffperf-inputs-")
            suffix = Path(urlparse(url).path).suffix.lower() or ".jpg"
            path = _download_dir / f"{hashlib.sha256(url.encode()).hexdigest()[:16]}{suffix}"
            path.write_bytes(resp.content)
            return path
        problem = f"HTTP {resp.status_code}" if resp.status_code != 200 else "an empty body"
    raise InputError(
        f"cannot download the reference image {url} ({DOWNLOAD_ATTEMPTS} attempts; last: {problem}); "
        "download it yourself and set reference_image to the local file"
    )


def _json(resp: requests.Response, url: str) -> dict[str, Any]:
    if resp.status_code != 200:
        raise RequestError(f"{url} answered HTTP {resp.status_code}: {resp.text[:500]}")
    try:
        body: dict[str, Any] = resp.json()
        return body
    except ValueError:
        raise RequestError(f"{url} answered HTTP 200 with a body that is not JSON: {resp.text[:200]!r}") from None


def _image(base_url: str, case: Case, deadline: float) -> Output:
    reply = _post(base_url + endpoint(case), request_body(case), case, deadline)
    try:
        data = base64.b64decode(reply["data"][0]["b64_json"])
        request_id = str(reply["id"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RequestError(f"image response lacks id or data[0].b64_json ({exc!r}): {str(reply)[:300]}") from None
    ext = image_extension(data)
    if ext is None:
        raise RequestError(f"image {request_id} is not PNG, JPEG or WebP (starts with {data[:12]!r})")
    asked = protocol.IMAGE_FORMAT_EXTS.get((case.output_format or "").lower())
    if asked and ext != asked:
        raise RequestError(f"image {request_id} is {ext}, asked for output_format {case.output_format}")
    return Output(request_id, "image", data, ext)


def image_extension(data: bytes) -> str | None:
    """The file extension of an image's bytes (``png``, ``jpg``, ``webp``), from their magic; None if none of these."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


_job_status: dict[str, str] = {}  # server URL -> its running video job's last polled status


def job_status(base_url: str) -> str:
    """The last polled status of the video job running on the server at ``base_url`` ('' when none runs)."""
    return _job_status.get(base_url, "")


def _video(base_url: str, case: Case, deadline: float) -> Output:
    url = base_url + endpoint(case)
    job = _post(url, request_body(case), case, deadline)
    if "id" not in job:
        raise RequestError(f"video response lacks an id: {str(job)[:300]}")
    job_url = f"{url}/{job['id']}"
    try:
        while job.get("status") != "completed":
            if job.get("status") in TERMINAL_FAILURES:
                raise RequestError(f"video job {job['id']} ended with status {job['status']}: {job.get('error')}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"video job {job['id']} still {job.get('status')} at the deadline")
            time.sleep(VIDEO_POLL_S)
            job = _json(requests.get(job_url, timeout=30), job_url)
            progress = f" {job['progress']} %" if isinstance(job.get("progress"), (int, float)) else ""
            _job_status[base_url] = f"video job {job['id']}: {job.get('status')}{progress}"
    finally:
        _job_status.pop(base_url, None)
    content = requests.get(job_url + "/content", timeout=max(deadline - time.monotonic(), 5.0))
    if content.status_code != 200:
        raise RequestError(f"{job_url}/content answered HTTP {content.status_code}: {content.text[:300]}")
    return Output(str(job["id"]), "video", content.content, "mp4")


def check_media(output: Output, case: Case) -> None:
    """The media decodes and has the expected size and, with frame interpolation, frame count (as SGLang checks)."""
    try:
        frames = output.frames()
    except Exception as exc:  # noqa: BLE001 (any decoder error means the bytes are not valid media)
        raise RequestError(f"{output.kind} {output.request_id} does not decode: {exc}") from None
    if not frames:
        raise RequestError(f"{output.kind} {output.request_id} has no frames")
    height, width = frames[0].shape[:2]
    size = expected_size(case)
    if size and (width, height) != size:
        raise RequestError(f"{output.kind} is {width}x{height}, expected {size[0]}x{size[1]}")
    count = expected_frame_count(case)
    if count is not None and len(frames) != count:
        raise RequestError(f"video has {len(frames)} frames, expected {count} after frame interpolation")


def expected_size(case: Case) -> tuple[int, int] | None:
    """The output size: the asked size, times ``upscaling_scale`` (default 4) when upscaling (not for edits)."""
    if not (case.width and case.height):
        return None
    extra = case.sglang_request_extra
    scale = int(extra.get("upscaling_scale") or 4) if extra.get("enable_upscaling") and case.task != "image-edit" else 1
    return case.width * scale, case.height * scale


def expected_frame_count(case: Case) -> int | None:
    """The frame count SGLang checks: ``(n - 1) * 2**exp + 1`` with frame interpolation, else none."""
    extra = case.sglang_request_extra
    if not (case.is_video and case.num_frames and extra.get("enable_frame_interpolation")):
        return None
    factor: int = 2 ** int(extra.get("frame_interpolation_exp") or 1)
    return (case.num_frames - 1) * factor + 1
