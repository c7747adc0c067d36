"""The ``/v1/videos`` routes (SGLang's ``video_api``): jobs queued on the worker, listed, fetched, deleted.

A job is created from JSON or multipart fields (``extra_body``/``extra_json``/``extra_params`` merged
in); its MP4 is kept in memory, and under ``--output-path`` when given.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
import numpy.typing as npt
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response
from pydantic import ValidationError

from .. import protocol
from .api_models import VIDEO_TEXT_FIELDS, VideoJob, VideoListResponse, VideoRequest, VideoResponse
from .media import video_compression
from .request_inputs import ServerDep, bad, decode_image, image_from_reference, params_for, request_path
from .specs import DEFAULT_FPS, DEFAULT_VIDEO_SECONDS
from .worker import RefServer

EXTRA_CONTAINERS = ("extra_body", "extra_json")

router = APIRouter()


def _form_value(value: str) -> Any:
    """A multipart field as SGLang reads one: JSON where it parses, else the text."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def _merge_extras(payload: dict[str, Any]) -> dict[str, Any]:
    """Promote ``extra_body``/``extra_json``/``extra_params`` entries to top-level fields (top level wins)."""
    for key in (*EXTRA_CONTAINERS, "extra_params"):
        extra = payload.pop(key, None)
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError:
                raise bad(f"{key} is not valid JSON") from None
        if isinstance(extra, dict):
            for name, value in extra.items():
                payload.setdefault(name, value)
    return payload


async def _video_payload(request: Request, server: RefServer) -> tuple[dict[str, Any], npt.NDArray[np.uint8] | None]:
    """The request's fields (JSON or multipart, extras merged) and its uploaded image, if any."""
    if "multipart/form-data" in request.headers.get("content-type", "").lower():
        form = await request.form()
        payload: dict[str, Any] = {}
        picture = None
        for key, value in form.multi_items():
            if isinstance(value, str):
                payload[key] = value if key in VIDEO_TEXT_FIELDS else _form_value(value)
            elif key == "input_reference":
                picture = decode_image(await value.read(), value.filename or key)
        return _merge_extras(payload), picture
    try:
        body = await request.json()
    except ValueError:
        body = {}
    payload = _merge_extras(dict(body) if isinstance(body, dict) else {})
    reference = payload.get("reference_url") or payload.get("input_reference")
    if isinstance(reference, str) and server.spec.task_type.accepts_image:
        return payload, image_from_reference(reference, server.config.request_files_dir)
    return payload, None


def _find_job(server: RefServer, video_id: str) -> VideoJob:
    job = server.videos.get(video_id)
    if job is None:
        raise bad("Video not found", 404)
    return job


@router.post(protocol.VIDEOS_PATH)
async def create_video(request: Request, server: ServerDep) -> VideoResponse:
    spec = server.spec
    payload, picture = await _video_payload(request, server)
    if "prompt" not in payload:
        if not spec.task_type.requires_image:  # SGLang's image-to-video pipelines take no prompt
            raise bad("prompt is required")
        payload["prompt"] = ""
    try:
        req = VideoRequest(**payload)
    except ValidationError as exc:
        raise bad(f"Invalid request body: {exc}") from None
    if not spec.is_video:
        raise bad(f"{spec.name} serves {spec.task_type.value}: use {protocol.IMAGES_PATH}")
    if picture is None and (req.input_reference or req.reference_url):
        raise bad(f"input_reference is not supported for {spec.task_type.value} models.")
    try:
        compression = video_compression(req.output_quality, req.output_compression)
    except ValueError as exc:
        raise bad(str(exc)) from None
    fps = req.fps if req.fps is not None else DEFAULT_FPS
    seconds = req.seconds if req.seconds is not None else DEFAULT_VIDEO_SECONDS
    params = params_for(
        server,
        {
            "prompt": req.prompt,
            "size": req.size,
            "width": req.width,
            "height": req.height,
            "n": req.num_outputs_per_prompt or req.n,
            "seed": req.seed,
            "num_frames": req.num_frames if req.num_frames is not None else fps * seconds,
            "fps": fps,
            "num_inference_steps": req.num_inference_steps,
            "guidance_scale": req.guidance_scale,
            "negative_prompt": req.negative_prompt,
            "image": picture,
        },
    )
    dump = req.perf_dump_path
    dump = request_path(dump, "perf_dump_path", server.config.request_files_dir) if dump is not None else None
    job = VideoJob(str(uuid.uuid4()), params, req.model or server.model_path, dump, compression)
    server.videos[job.id] = job
    body = job.response()  # taken before the worker can pick the job up: always "queued"
    server.worker.submit(lambda: server.run_video(job))
    return body


@router.get(protocol.VIDEOS_PATH)
async def list_videos(
    server: ServerDep,
    after: str | None = Query(None),
    limit: int = Query(20, ge=1, le=100),
    order: str = Query("desc", pattern="^(asc|desc)$"),
) -> VideoListResponse:
    jobs = list(server.videos.values())
    if order == "desc":
        jobs.reverse()
    if after is not None:
        ids = [j.id for j in jobs]
        jobs = jobs[ids.index(after) + 1 :] if after in ids else []
    page = jobs[:limit]
    return VideoListResponse(
        data=[j.response() for j in page],
        first_id=page[0].id if page else None,
        last_id=page[-1].id if page else None,
        has_more=len(jobs) > limit,
    )


@router.get(protocol.VIDEOS_PATH + "/{video_id}")
async def get_video(video_id: str, server: ServerDep) -> VideoResponse:
    return _find_job(server, video_id).response()


@router.delete(protocol.VIDEOS_PATH + "/{video_id}")
async def delete_video(video_id: str, server: ServerDep) -> VideoResponse:
    job = server.videos.pop(video_id, None)
    if job is None:
        raise bad("Video not found", 404)
    return job.response().model_copy(update={"status": "deleted"})


@router.get(protocol.VIDEOS_PATH + "/{video_id}/content")
async def video_content(video_id: str, server: ServerDep, variant: str | None = Query(None)) -> Response:
    job = _find_job(server, video_id)
    if job.status not in ("completed", "failed"):
        raise bad("Generation is still in-progress", 404)
    if job.content is None or variant not in (None, "0"):
        raise bad(f"Video variant {variant} not found", 404)
    return Response(job.content, media_type="video/mp4")
