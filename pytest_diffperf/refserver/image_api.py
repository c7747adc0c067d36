"""The ``/v1/images`` routes (SGLang's ``image_api``): generations, edits, and the saved files' content.

A generation runs on the worker while the request waits; images are encoded off the event loop and
returned as base64 or, under ``--output-path``, as URLs of saved files.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, UploadFile
from fastapi.responses import FileResponse

from .. import protocol
from .api_models import ImageRequest, ImageResponse, ImageResponseData
from .media import choose_image_ext, encode_image
from .request_inputs import ServerDep, bad, decode_image, image_from_reference, params_for, request_path
from .worker import RefServer

router = APIRouter()


async def _run_images(
    server: RefServer, fields: dict[str, Any], output_format: str | None, background: str | None, fmt: str | None
) -> ImageResponse:
    config, spec = server.config, server.spec
    response_format = (fmt or "b64_json").lower()
    if response_format not in ("url", "b64_json"):
        raise bad(f"response_format={response_format} is not supported")
    if response_format == "url" and config.output_path is None:
        raise bad("response_format='url' requires cloud storage to be configured.")
    if spec.is_video:
        raise bad(f"{spec.name} serves {spec.task_type.value}: use {protocol.VIDEOS_PATH}")
    perf_dump_path = fields.pop("perf_dump_path", None)
    if perf_dump_path is not None:
        perf_dump_path = request_path(perf_dump_path, "perf_dump_path", config.request_files_dir)
    params = params_for(server, fields)
    ext = choose_image_ext(output_format, background)
    request_id = str(uuid.uuid4())
    result = await asyncio.wrap_future(
        server.worker.submit(lambda: server.generate(request_id, params, perf_dump_path))
    )
    blobs = await asyncio.to_thread(lambda: [encode_image(f, ext) for f in result.frames])
    paths = []
    if config.output_path is not None:
        for i, blob in enumerate(blobs):
            name = f"{request_id}.{ext}" if i == 0 else f"{request_id}_{i}.{ext}"
            paths.append(server.save_output(name, blob))
        server.images[request_id] = paths[0]
    data = [
        ImageResponseData(
            b64_json=base64.b64encode(blob).decode("ascii") if response_format == "b64_json" else None,
            url=None
            if response_format == "b64_json"
            else f"/v1/images/{request_id}/content" + (f"?variant={i}" if len(blobs) > 1 else ""),
            revised_prompt=params.prompt,
            file_path=paths[i] if paths else None,
        )
        for i, blob in enumerate(blobs)
    ]
    return ImageResponse(id=request_id, created=int(time.time()), data=data, inference_time_s=result.total_ms / 1000)


@router.post(protocol.IMAGES_PATH)
async def generate_images(req: ImageRequest, server: ServerDep) -> ImageResponse:
    fields = {
        "prompt": req.prompt,
        "size": req.size,
        "width": req.width,
        "height": req.height,
        "n": req.n,
        "seed": req.seed,
        "num_inference_steps": req.num_inference_steps,
        "guidance_scale": req.guidance_scale,
        "negative_prompt": req.negative_prompt,
        "perf_dump_path": req.perf_dump_path,
    }
    return await _run_images(server, fields, req.output_format, req.background, req.response_format)


@router.post(protocol.IMAGE_EDITS_PATH)
async def edit_images(
    server: ServerDep,
    prompt: Annotated[str, Form()],
    image: Annotated[list[UploadFile] | None, File()] = None,
    image_array: Annotated[list[UploadFile] | None, File(alias="image[]")] = None,
    url: Annotated[list[str] | None, Form()] = None,
    url_array: Annotated[list[str] | None, Form(alias="url[]")] = None,
    model: Annotated[str | None, Form()] = None,
    n: Annotated[int | None, Form()] = 1,
    response_format: Annotated[str | None, Form()] = None,
    size: Annotated[str | None, Form()] = None,
    output_format: Annotated[str | None, Form()] = None,
    background: Annotated[str | None, Form()] = "auto",
    seed: Annotated[int | None, Form()] = None,
    negative_prompt: Annotated[str | None, Form()] = None,
    guidance_scale: Annotated[float | None, Form()] = None,
    num_inference_steps: Annotated[int | None, Form()] = None,
    perf_dump_path: Annotated[str | None, Form()] = None,
    num_frames: Annotated[int, Form()] = 1,
) -> ImageResponse:
    uploads = image or image_array or []
    urls = url or url_array or []
    if not uploads and not urls:
        raise bad("Field 'image' or 'url' is required", 422)
    if uploads:
        first = uploads[0]
        picture = decode_image(await first.read(), first.filename or "image")
    else:
        picture = image_from_reference(urls[0], server.config.request_files_dir)
    task = server.spec.task_type
    if not task.accepts_image:
        raise bad(f"input_reference is not supported for {task.value} models.")
    fields = {
        "prompt": prompt,
        "size": size,
        "n": n,
        "seed": seed,
        "num_inference_steps": num_inference_steps,
        "guidance_scale": guidance_scale,
        "negative_prompt": negative_prompt,
        "perf_dump_path": perf_dump_path,
        "image": picture,
    }
    return await _run_images(server, fields, output_format, background, response_format)


@router.get("/v1/images/{image_id}/content")
async def image_content(image_id: str, server: ServerDep, variant: str | None = Query(None)) -> FileResponse:
    if server.config.output_path is None:
        raise bad(
            "Image was not persisted on disk (output_path is disabled). Use b64_json response_format"
            " or configure cloud storage.",
            404,
        )
    path = server.images.get(image_id)
    if path is None:
        raise bad("Image not found", 404)
    if variant not in (None, "0"):
        stem, ext = path.rsplit(".", 1)
        path = f"{stem}_{variant}.{ext}"
    media = "image/png" if path.endswith(".png") else "image/webp" if path.endswith(".webp") else "image/jpeg"
    return FileResponse(path, media_type=media)
