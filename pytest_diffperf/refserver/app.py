"""FastAPI app: SGLang's diffusion HTTP API (health, models, images, videos) over one staged pipeline.

Errors are SGLang's: ``{"detail": ...}`` from ``HTTPException`` (400, 404, 500) and FastAPI's 422 for
a body that fails validation. Requests other than the health and info routes wait until the
server warmup is done, as SGLang's ``wait_for_server_warmup`` middleware does.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt
from fastapi import FastAPI, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse, Response
from PIL import Image, UnidentifiedImageError
from pydantic import ValidationError

from .. import protocol
from .api_models import (
    VIDEO_TEXT_FIELDS,
    ImageRequest,
    ImageResponse,
    ImageResponseData,
    ModelCard,
    ModelInfo,
    ModelList,
    ModelsInfo,
    ServerInfo,
    VideoJob,
    VideoListResponse,
    VideoRequest,
    VideoResponse,
)
from .media import choose_image_ext, encode_image
from .specs import DEFAULT_FPS, DEFAULT_VIDEO_SECONDS, GenParams
from .worker import RefServer, ServerConfig

log = logging.getLogger("refserver")

WARMUP_BYPASS_PATHS = (
    "/metrics",
    protocol.LIVENESS_PATH,
    protocol.HEALTH_PATH,
    "/health_generate",
    "/model_info",
    "/server_info",
)
EXTRA_CONTAINERS = ("extra_body", "extra_json")
LORA_FAILURES = {
    "/v1/set_lora": "Failed to set LoRA adapter",
    "/v1/merge_lora_weights": "Failed to merge LoRA weights",
    "/v1/unmerge_lora_weights": "Failed to unmerge LoRA weights",
}
NO_LORA = "the reference server has no LoRA support"


def _bad(message: str, status: int = 400) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


def _decode_image(data: bytes, source: str) -> npt.NDArray[np.uint8]:
    try:
        with Image.open(io.BytesIO(data)) as img:
            return np.asarray(img.convert("RGB"))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise _bad(f"Failed to process image source: {source}: {exc}") from None


def request_path(value: str, field: str, files_dir: str | None) -> str:
    """A file path a request names (``field``), refused (400) unless it lies inside ``files_dir``: a difference
    from SGLang, which reads and writes any path a request names."""
    if files_dir is None:
        raise _bad(
            f"{field}: file paths in requests are refused; start the reference server with "
            "--request-files-dir DIR to accept paths inside DIR"
        )
    resolved = Path(value).resolve()
    if not resolved.is_relative_to(Path(files_dir).resolve()):
        raise _bad(f"{field}: {value} is outside --request-files-dir {files_dir}")
    return str(resolved)


def _image_from_reference(value: str, files_dir: str | None) -> npt.NDArray[np.uint8]:
    """A JSON ``input_reference``/``reference_url``: a ``data:`` URL or a file path inside ``files_dir``."""
    if value.startswith("data:"):
        try:
            return _decode_image(base64.b64decode(value.split(",", 1)[1], validate=True), "data URL")
        except (IndexError, binascii.Error):
            raise _bad("Failed to process image source: data URL is not base64") from None
    if "://" in value:
        raise _bad(f"Failed to process image source: {value}: the reference server does not download URLs")
    path = request_path(value, "input_reference", files_dir)
    try:
        with open(path, "rb") as fh:
            return _decode_image(fh.read(), value)
    except OSError as exc:
        raise _bad(f"Failed to process image source: {value}: {exc.strerror}") from None


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
                raise _bad(f"{key} is not valid JSON") from None
        if isinstance(extra, dict):
            for name, value in extra.items():
                payload.setdefault(name, value)
    return payload


def create_app(config: ServerConfig) -> FastAPI:
    ready = asyncio.Event()
    loop_box: list[asyncio.AbstractEventLoop] = []

    def on_ready() -> None:
        loop_box[0].call_soon_threadsafe(ready.set)

    server = RefServer(config, on_ready)
    spec = config.spec
    images: dict[str, str] = {}  # image id -> file under --output-path

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loop_box.append(asyncio.get_running_loop())
        server.worker.submit(server.load)
        yield

    app = FastAPI(title="pytest-diffperf reference diffusion server", lifespan=lifespan)
    app.state.server = server

    @app.middleware("http")
    async def wait_for_server_warmup(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if not ready.is_set() and request.url.path not in WARMUP_BYPASS_PATHS:
            await ready.wait()
        return await call_next(request)

    def params_for(fields: dict[str, Any]) -> GenParams:
        try:
            return spec.params(num_gpus=config.num_gpus, **fields)
        except (TypeError, ValueError) as exc:
            raise _bad(str(exc)) from None

    def model_card() -> ModelCard:
        return ModelCard(
            id=spec.name,
            created=server.started,
            root=spec.name,
            num_gpus=config.num_gpus,
            task_type=spec.task_type.value,
            supported_task_types=[spec.task_type.value],
            pipeline_name=spec.pipeline_name,
            pipeline_class=spec.pipeline_class,
        )

    # ---- health and info --------------------------------------------------------------------
    @app.get(protocol.LIVENESS_PATH)
    async def liveness() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(protocol.HEALTH_PATH)
    @app.get("/health_generate")
    async def health() -> Response:
        if not ready.is_set():
            return Response(status_code=503)
        return JSONResponse({"status": "ok"})

    @app.get(protocol.MODELS_PATH)
    async def list_models() -> ModelList:
        return ModelList(data=[model_card()])

    @app.get(protocol.MODELS_PATH + "/{model:path}", response_model=None)
    async def retrieve_model(model: str) -> JSONResponse | ModelCard:
        if model != spec.name:
            error = {
                "message": f"The model '{model}' does not exist",
                "type": "invalid_request_error",
                "param": "model",
                "code": "model_not_found",
            }
            return JSONResponse({"error": error}, status_code=404)
        return model_card()

    @app.get("/models")
    async def models_info() -> ModelsInfo:
        return ModelsInfo(
            model_path=spec.name,
            num_gpus=config.num_gpus,
            task_type=spec.task_type.value,
            supported_task_types=[spec.task_type.value],
            pipeline_name=spec.pipeline_name,
            pipeline_class=spec.pipeline_class,
        )

    @app.get("/server_info")
    async def server_info() -> ServerInfo:
        return ServerInfo(model_path=spec.name, served_model_name=spec.name, version=_version())

    @app.get("/model_info")
    async def model_info() -> ModelInfo:
        task = spec.task_type
        return ModelInfo(
            model_path=spec.name,
            architectures=[spec.pipeline_class],
            has_image_understanding=task.accepts_image,
            task_type=task.value,
            supported_task_types=[task.value],
            output_types=[task.output_type],
            is_image_gen=not task.is_video,
        )

    @app.get("/v1/model_info")
    async def v1_model_info() -> dict[str, str]:
        return {"model_path": spec.name}

    # ---- LoRA (unsupported: answered as SGLang answers a scheduler failure) -------------------
    for path, failure in LORA_FAILURES.items():

        async def lora(failure: str = failure) -> None:
            raise _bad(f"{failure}: {NO_LORA}", 500)

        app.post(path)(lora)

    @app.get("/v1/list_loras")
    async def list_loras() -> dict[str, Any]:  # SGLang's adapters by name: never any here
        return {}

    # ---- images -----------------------------------------------------------------------------
    async def run_images(
        fields: dict[str, Any], output_format: str | None, background: str | None, fmt: str | None
    ) -> ImageResponse:
        response_format = (fmt or "b64_json").lower()
        if response_format not in ("url", "b64_json"):
            raise _bad(f"response_format={response_format} is not supported")
        if response_format == "url" and config.output_path is None:
            raise _bad("response_format='url' requires cloud storage to be configured.")
        if spec.is_video:
            raise _bad(f"{spec.name} serves {spec.task_type.value}: use {protocol.VIDEOS_PATH}")
        perf_dump_path = fields.pop("perf_dump_path", None)
        if perf_dump_path is not None:
            perf_dump_path = request_path(perf_dump_path, "perf_dump_path", config.request_files_dir)
        params = params_for(fields)
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
            images[request_id] = paths[0]
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
        return ImageResponse(
            id=request_id, created=int(time.time()), data=data, inference_time_s=result.total_ms / 1000
        )

    @app.post(protocol.IMAGES_PATH)
    async def generate_images(req: ImageRequest) -> ImageResponse:
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
        return await run_images(fields, req.output_format, req.background, req.response_format)

    @app.post(protocol.IMAGE_EDITS_PATH)
    async def edit_images(
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
            raise _bad("Field 'image' or 'url' is required", 422)
        if uploads:
            first = uploads[0]
            picture = _decode_image(await first.read(), first.filename or "image")
        else:
            picture = _image_from_reference(urls[0], config.request_files_dir)
        if not spec.task_type.accepts_image:
            raise _bad(f"input_reference is not supported for {spec.task_type.value} models.")
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
        return await run_images(fields, output_format, background, response_format)

    @app.get("/v1/images/{image_id}/content")
    async def image_content(image_id: str, variant: str | None = Query(None)) -> FileResponse:
        if config.output_path is None:
            raise _bad(
                "Image was not persisted on disk (output_path is disabled). Use b64_json response_format"
                " or configure cloud storage.",
                404,
            )
        path = images.get(image_id)
        if path is None:
            raise _bad("Image not found", 404)
        if variant not in (None, "0"):
            stem, ext = path.rsplit(".", 1)
            path = f"{stem}_{variant}.{ext}"
        media = "image/png" if path.endswith(".png") else "image/webp" if path.endswith(".webp") else "image/jpeg"
        return FileResponse(path, media_type=media)

    # ---- videos -----------------------------------------------------------------------------
    async def video_payload(request: Request) -> tuple[dict[str, Any], npt.NDArray[np.uint8] | None]:
        """The request's fields (JSON or multipart, extras merged) and its uploaded image, if any."""
        if "multipart/form-data" in request.headers.get("content-type", "").lower():
            form = await request.form()
            payload: dict[str, Any] = {}
            picture = None
            for key, value in form.multi_items():
                if isinstance(value, str):
                    payload[key] = value if key in VIDEO_TEXT_FIELDS else _form_value(value)
                elif key == "input_reference":
                    picture = _decode_image(await value.read(), value.filename or key)
            return _merge_extras(payload), picture
        try:
            body = await request.json()
        except ValueError:
            body = {}
        payload = _merge_extras(dict(body) if isinstance(body, dict) else {})
        reference = payload.get("reference_url") or payload.get("input_reference")
        if isinstance(reference, str) and spec.task_type.accepts_image:
            return payload, _image_from_reference(reference, config.request_files_dir)
        return payload, None

    @app.post(protocol.VIDEOS_PATH)
    async def create_video(request: Request) -> VideoResponse:
        payload, picture = await video_payload(request)
        if "prompt" not in payload:
            if not spec.task_type.requires_image:  # SGLang's image-to-video pipelines take no prompt
                raise _bad("prompt is required")
            payload["prompt"] = ""
        try:
            req = VideoRequest(**payload)
        except ValidationError as exc:
            raise _bad(f"Invalid request body: {exc}") from None
        if not spec.is_video:
            raise _bad(f"{spec.name} serves {spec.task_type.value}: use {protocol.IMAGES_PATH}")
        if picture is None and (req.input_reference or req.reference_url):
            raise _bad(f"input_reference is not supported for {spec.task_type.value} models.")
        fps = req.fps if req.fps is not None else DEFAULT_FPS
        seconds = req.seconds if req.seconds is not None else DEFAULT_VIDEO_SECONDS
        params = params_for(
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
            }
        )
        dump = req.perf_dump_path
        dump = request_path(dump, "perf_dump_path", config.request_files_dir) if dump is not None else None
        job = VideoJob(str(uuid.uuid4()), params, req.model or spec.name, dump)
        server.videos[job.id] = job
        body = job.response()  # taken before the worker can pick the job up: always "queued"
        server.worker.submit(lambda: server.run_video(job))
        return body

    @app.get(protocol.VIDEOS_PATH)
    async def list_videos(
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

    def find_job(video_id: str) -> VideoJob:
        job = server.videos.get(video_id)
        if job is None:
            raise _bad("Video not found", 404)
        return job

    @app.get(protocol.VIDEOS_PATH + "/{video_id}")
    async def get_video(video_id: str) -> VideoResponse:
        return find_job(video_id).response()

    @app.delete(protocol.VIDEOS_PATH + "/{video_id}")
    async def delete_video(video_id: str) -> VideoResponse:
        job = server.videos.pop(video_id, None)
        if job is None:
            raise _bad("Video not found", 404)
        return job.response().model_copy(update={"status": "deleted"})

    @app.get(protocol.VIDEOS_PATH + "/{video_id}/content")
    async def video_content(video_id: str, variant: str | None = Query(None)) -> Response:
        job = find_job(video_id)
        if job.status not in ("completed", "failed"):
            raise _bad("Generation is still in-progress", 404)
        if job.content is None or variant not in (None, "0"):
            raise _bad(f"Video variant {variant} not found", 404)
        return Response(job.content, media_type="video/mp4")

    # ---- outputs the reference models cannot make -------------------------------------------
    @app.post("/v1/meshes")
    async def meshes() -> None:
        raise _bad(f"{spec.name} serves {spec.task_type.value}; mesh generation (I2M) is not supported")

    return app


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pytest-diffperf")
    except metadata.PackageNotFoundError:
        return "0"
