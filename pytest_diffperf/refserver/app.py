"""FastAPI app: SGLang's OpenAI-style image/video endpoints over one staged pipeline.

All model work (load, warmup, generations, video jobs) runs FIFO on a single worker thread, like
one GPU. The HTTP layer stays responsive meanwhile, so ``/health`` answers 503 while the model
loads and warms up, then 200. Torch is imported on the worker thread, not at import time.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import logging
import os
import queue
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..protocol import HEALTH_PATH, IMAGES_PATH, LOAD_MARKER, MODELS_PATH, VIDEOS_PATH
from .faults import Faults
from .media import encode_image, encode_mp4
from .memory import MemoryTracker
from .perflog import PerfLog
from .specs import MODELS, GenParams, ModelSpec, frames_for

log = logging.getLogger("refserver")

MAX_SEED = 2**63 - 1


@dataclass
class ServerConfig:
    spec: ModelSpec
    faults: Faults = field(default_factory=Faults)
    warmup_mode: Literal["server", "request"] = "server"
    warmup_params: dict[str, Any] = field(default_factory=dict)
    default_seed: int = 42
    num_threads: int = 1


class ApiError(Exception):
    """An error answered with an OpenAI-style body ``{"error": {"message", "type", "code"}}``."""

    def __init__(self, status: int, message: str, code: str, type_: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.message, self.code, self.type = status, message, code, type_

    def response(self) -> JSONResponse:
        return JSONResponse(
            {"error": {"message": self.message, "type": self.type, "code": self.code}},
            status_code=self.status,
        )


class Worker:
    """A single daemon thread running submitted callables one at a time, in order."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        threading.Thread(target=self._loop, name="refserver-worker", daemon=True).start()

    def submit(self, fn: Callable[[], Any]) -> concurrent.futures.Future:
        future: concurrent.futures.Future = concurrent.futures.Future()
        self._jobs.put((fn, future))
        return future

    def _loop(self) -> None:
        while True:
            fn, future = self._jobs.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting request
                future.set_exception(exc)


class GenerationFields(BaseModel):
    """Fields shared by image and video requests (unknown fields are ignored, as OpenAI clients send extras)."""

    model_config = ConfigDict(extra="ignore")

    prompt: str = Field(min_length=1)
    model: str | None = None
    size: str | None = None
    width: int | None = Field(None, ge=1)
    height: int | None = Field(None, ge=1)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    num_inference_steps: int | None = Field(None, ge=1, le=500)
    guidance_scale: float | None = Field(None, ge=0, le=100)
    negative_prompt: str | None = None


class ImageRequest(GenerationFields):
    n: int = Field(1, ge=1, le=4)
    response_format: Literal["b64_json", "url"] = "b64_json"
    output_format: Literal["png", "jpeg", "jpg"] = "png"


class VideoRequest(GenerationFields):
    seconds: float | None = Field(None, gt=0, le=60)  # OpenAI sends a string such as "4"
    num_frames: int | None = Field(None, ge=1)
    fps: int | None = Field(None, ge=1, le=120)


@dataclass
class VideoJob:
    id: str
    params: GenParams
    fps: int
    model: str
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "queued"
    progress: int = 0
    completed_at: int | None = None
    error: dict[str, str] | None = None
    content: bytes | None = None

    def to_json(self) -> dict[str, Any]:
        p = self.params
        return {
            "id": self.id,
            "object": "video",
            "model": self.model,
            "status": self.status,
            "progress": self.progress,
            "created_at": self.created_at,
            "completed_at": self.completed_at,
            "size": f"{p.width}x{p.height}",
            "seconds": f"{(p.num_frames - 1) / self.fps:g}",
            "num_frames": p.num_frames,
            "fps": self.fps,
            "prompt": p.prompt,
            "error": self.error,
        }


class RefServer:
    """Server state: the pipeline (once loaded), readiness, video jobs, perf log."""

    def __init__(self, config: ServerConfig):
        self.config = config
        self.spec = config.spec
        self.worker = Worker()
        self.memory = MemoryTracker()
        self.perflog = PerfLog()
        self.pipeline: Any = None
        self.state = "loading"  # loading -> warming_up -> ready
        self.warmed_up = False
        self.videos: dict[str, VideoJob] = {}
        self.started = int(time.time())

    # ---- startup (worker thread) ----------------------------------------------------------
    def load(self) -> None:
        try:
            self._load()
        except BaseException:  # noqa: BLE001 - a server that cannot load must not look alive
            traceback.print_exc()
            print(
                f"[refserver] error: failed to load {self.spec.name}; exiting",
                flush=True,
            )
            os._exit(1)

    def _load(self) -> None:
        faults = self.config.faults
        if faults.fail_startup:
            print(
                "[refserver] error: injected startup failure (--inject-fail-startup)",
                flush=True,
            )
            os._exit(1)
        if faults.load_delay_ms:
            time.sleep(faults.load_delay_ms / 1000)
        import torch

        torch.set_num_threads(self.config.num_threads)
        from .pipeline import StagedPipeline

        self.pipeline = StagedPipeline(self.spec, faults, self.memory)
        print(f"{LOAD_MARKER}{time.monotonic_ns()}\n", end="", flush=True)  # one write: no other thread's output mid-line
        if self.config.warmup_mode == "server":
            self.state = "warming_up"
            params = self.spec.params(seed=self.config.default_seed, **self.config.warmup_params)
            t0 = time.perf_counter()
            self.pipeline.run(params, warmup=True)
            self.warmed_up = True
            log.info("warmup done in %.0f ms", (time.perf_counter() - t0) * 1000)
        print(f"[refserver] ready: {self.spec.name}", flush=True)
        self.state = "ready"

    # ---- generation (worker thread) -------------------------------------------------------
    def generate(
        self,
        request_id: str,
        params: GenParams,
        on_step: Callable[[int, int], None] | None = None,
    ):
        """Run one request (after a request-mode warmup clone if due) and log its perf record."""
        if not self.warmed_up:
            self.pipeline.run(params, warmup=True)
            self.warmed_up = True
        result = self.pipeline.run(params, on_step=on_step)
        log.info("request %s: %.1f ms (%d steps)", request_id, result.total_ms, len(result.steps))
        self.perflog.write(
            request_id,
            result.stages,
            result.steps,
            result.total_ms,
            self.memory.snapshots(),
        )
        return result

    def run_video(self, job: VideoJob) -> None:
        job.status = "in_progress"

        def on_step(done: int, total: int) -> None:
            job.progress = max(job.progress, int(90 * done / total))

        try:
            result = self.generate(job.id, job.params, on_step)
            job.content = encode_mp4(result.frames[0], job.fps)
        except Exception as exc:
            log.exception("video job %s failed", job.id)
            job.status, job.error = (
                "failed",
                {"code": "generation_failed", "message": str(exc)},
            )
            return
        job.progress, job.completed_at, job.status = 100, int(time.time()), "completed"

    # ---- request parsing (event loop) -----------------------------------------------------
    def params_for(self, req: GenerationFields, task: str, **extra: Any) -> GenParams:
        if self.state != "ready":
            raise ApiError(
                503,
                f"server is not ready ({self.state})",
                "server_not_ready",
                "server_error",
            )
        if req.model is not None and req.model != self.spec.name:
            raise ApiError(
                400,
                f"model {req.model!r} is not served here (serving {self.spec.name})",
                "model_not_found",
            )
        if self.spec.task != task:
            raise ApiError(
                400,
                f"{self.spec.name} generates {self.spec.task}s, not {task}s",
                "unsupported_task",
            )
        try:
            return self.spec.params(
                seed=self.config.default_seed if req.seed is None else req.seed,
                prompt=req.prompt,
                negative_prompt=req.negative_prompt,
                size=req.size,
                width=req.width,
                height=req.height,
                num_inference_steps=req.num_inference_steps,
                guidance_scale=req.guidance_scale,
                **extra,
            )
        except ValueError as exc:
            raise ApiError(400, str(exc), "invalid_parameter") from None


def _validation_message(exc: RequestValidationError) -> tuple[str, str]:
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return "request body is not valid JSON", "invalid_json"
    parts = []
    for e in errors:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        parts.append(f"{loc or 'body'}: {e.get('msg')}")
    return "; ".join(parts) or "invalid request", "invalid_request"


def create_app(config: ServerConfig) -> FastAPI:
    server = RefServer(config)
    spec = config.spec

    async def lifespan(app: FastAPI):
        server.worker.submit(server.load)
        yield

    app = FastAPI(title="pytest-diffperf reference diffusion server", lifespan=lifespan)
    app.state.server = server

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, code = _validation_message(exc)
        return ApiError(400, message, code).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "not_found" if exc.status_code == 404 else f"http_{exc.status_code}"
        return ApiError(exc.status_code, str(exc.detail), code).response()

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s", request.url.path)
        return ApiError(500, f"internal error: {exc}", "internal_error", "server_error").response()

    @app.get(HEALTH_PATH)
    async def health() -> JSONResponse:
        return JSONResponse(
            {"status": server.state},
            status_code=200 if server.state == "ready" else 503,
        )

    @app.get(MODELS_PATH)
    async def list_models() -> dict[str, Any]:
        ordered = [spec] + [m for m in MODELS.values() if m is not spec]
        return {
            "object": "list",
            "data": [
                {
                    "id": m.name,
                    "object": "model",
                    "created": server.started,
                    "owned_by": "pytest-diffperf",
                    "served": m is spec,
                    "task": m.task,
                    "default_size": f"{m.width}x{m.height}",
                    "default_num_inference_steps": m.steps,
                    **({"default_num_frames": m.num_frames, "default_fps": m.fps} if m.task == "video" else {}),
                }
                for m in ordered
            ],
        }

    @app.get("/models")
    async def model_info() -> dict[str, Any]:
        return {
            "model_path": spec.name,
            "task_type": "T2V" if spec.task == "video" else "T2I",
            "num_gpus": 0,
        }

    @app.post(IMAGES_PATH)
    async def generate_images(req: ImageRequest) -> dict[str, Any]:
        params = server.params_for(req, "image", n=req.n)
        if req.response_format != "b64_json":
            raise ApiError(
                400,
                "response_format=url is not supported; use b64_json",
                "unsupported_response_format",
            )
        request_id = str(uuid.uuid4())
        result = await asyncio.wrap_future(server.worker.submit(lambda: server.generate(request_id, params)))
        blobs = await asyncio.to_thread(lambda: [encode_image(f, req.output_format) for f in result.frames])
        return {
            "id": request_id,
            "created": int(time.time()),
            "data": [{"b64_json": base64.b64encode(b).decode("ascii")} for b in blobs],
        }

    @app.post(VIDEOS_PATH)
    async def create_video(req: VideoRequest) -> dict[str, Any]:
        fps = req.fps or spec.fps
        frames = req.num_frames
        if frames is None and req.seconds is not None:
            frames = frames_for(req.seconds, fps)
        params = server.params_for(req, "video", num_frames=frames)
        job = VideoJob(id=f"video_{uuid.uuid4().hex}", params=params, fps=fps, model=spec.name)
        server.videos[job.id] = job
        body = job.to_json()  # taken before the worker can pick the job up: always "queued"
        server.worker.submit(lambda: server.run_video(job))
        return body

    @app.get(VIDEOS_PATH)
    async def list_videos() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [job.to_json() for job in server.videos.values()],
        }

    def find_job(video_id: str) -> VideoJob:
        job = server.videos.get(video_id)
        if job is None:
            raise ApiError(404, f"no video with id {video_id!r}", "video_not_found")
        return job

    @app.get(VIDEOS_PATH + "/{video_id}")
    async def get_video(video_id: str) -> dict[str, Any]:
        return find_job(video_id).to_json()

    @app.get(VIDEOS_PATH + "/{video_id}/content")
    async def video_content(video_id: str) -> Response:
        job = find_job(video_id)
        if job.status != "completed" or job.content is None:
            raise ApiError(
                409,
                f"video {video_id} is {job.status}, not completed",
                "video_not_ready",
            )
        return Response(job.content, media_type="video/mp4")

    return app
