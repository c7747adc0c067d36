"""HTTP client for SGLang's OpenAI-style generation API: build the request, fetch and check the media."""

from __future__ import annotations

import base64
import io
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import imageio.v3 as iio
import numpy as np
import requests
from PIL import Image

from .. import protocol
from ..cases import Case
from .process import ServerFailure


class RequestError(ServerFailure):
    """The server answered, but not with a valid output for the case."""


@dataclass(frozen=True)
class Output:
    request_id: str
    kind: str  # "image" | "video"
    data: bytes
    extension: str

    def frames(self) -> list[np.ndarray]:
        """Decoded uint8 RGB frames (one for an image)."""
        if self.kind == "image":
            return [np.asarray(Image.open(io.BytesIO(self.data)).convert("RGB"))]
        return list(iio.imread(self.data, index=None, plugin="pyav")[..., :3])  # PyAV: no ffmpeg pipes left open


def request_body(case: Case) -> dict[str, Any]:
    """The JSON body SGLang's tests send for ``case``; ``sglang_request_extra`` merges last, a None deletes."""
    body: dict[str, Any] = {"model": case.model, "prompt": case.prompt}
    if case.width and case.height:
        body["size"] = f"{case.width}x{case.height}"
    if case.is_video:
        optional = ("num_frames", "fps", "seed", "num_inference_steps", "guidance_scale", "negative_prompt")
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
    return "/v1/images/edits" if case.task == "image-edit" else protocol.IMAGES_PATH


def generate(base_url: str, case: Case, timeout: float) -> Output:
    deadline = time.monotonic() + timeout
    output = _video(base_url, case, deadline) if case.is_video else _image(base_url, case, deadline)
    check_media(output, case)
    return output


def _post(url: str, body: dict[str, Any], case: Case, deadline: float) -> dict[str, Any]:
    image = case.reference_image if isinstance(case.reference_image, str) else None
    remaining = max(deadline - time.monotonic(), 1.0)
    if image:
        fields = {k: (None, str(v)) for k, v in body.items()}
        fields["image" if not case.is_video else "input_reference"] = (Path(image).name, Path(image).read_bytes())
        resp = requests.post(url, files=fields, timeout=remaining)
    else:
        resp = requests.post(url, json=body, timeout=remaining)
    return _json(resp, url)


def _json(resp: requests.Response, url: str) -> dict[str, Any]:
    if resp.status_code != 200:
        raise RequestError(f"{url} answered HTTP {resp.status_code}: {resp.text[:500]}")
    try:
        return resp.json()
    except ValueError:
        raise RequestError(f"{url} answered HTTP 200 with a body that is not JSON: {resp.text[:200]!r}") from None


def _image(base_url: str, case: Case, deadline: float) -> Output:
    reply = _post(base_url + endpoint(case), request_body(case), case, deadline)
    try:
        data = base64.b64decode(reply["data"][0]["b64_json"])
        request_id = str(reply["id"])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise RequestError(f"image response lacks id or data[0].b64_json ({exc!r}): {str(reply)[:300]}") from None
    ext = "jpg" if case.output_format in ("jpeg", "jpg") else "png"
    return Output(request_id, "image", data, ext)


def _video(base_url: str, case: Case, deadline: float) -> Output:
    url = base_url + endpoint(case)
    job = _post(url, request_body(case), case, deadline)
    if "id" not in job:
        raise RequestError(f"video response lacks an id: {str(job)[:300]}")
    job_url = f"{url}/{job['id']}"
    while job.get("status") != "completed":
        if job.get("status") == "failed":
            raise RequestError(f"video job {job['id']} failed: {job.get('error')}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"video job {job['id']} still {job.get('status')} at the deadline")
        time.sleep(0.05)
        job = _json(requests.get(job_url, timeout=30), job_url)
    content = requests.get(job_url + "/content", timeout=max(deadline - time.monotonic(), 5.0))
    if content.status_code != 200:
        raise RequestError(f"{job_url}/content answered HTTP {content.status_code}: {content.text[:300]}")
    return Output(str(job["id"]), "video", content.content, "mp4")


def check_media(output: Output, case: Case) -> None:
    """The media decodes, has the asked size and (video) the asked frame count."""
    try:
        frames = output.frames()
    except Exception as exc:  # any decoder error means the bytes are not valid media
        raise RequestError(f"{output.kind} {output.request_id} does not decode: {exc}") from None
    if not frames:
        raise RequestError(f"{output.kind} {output.request_id} has no frames")
    height, width = frames[0].shape[:2]
    if case.width and case.height and (width, height) != (case.width, case.height):
        raise RequestError(f"{output.kind} is {width}x{height}, asked for {case.width}x{case.height}")
    if case.is_video and case.num_frames and len(frames) != case.num_frames:
        raise RequestError(f"video has {len(frames)} frames, asked for {case.num_frames}")
