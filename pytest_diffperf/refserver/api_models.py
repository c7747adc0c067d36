"""Request and response shapes of SGLang's OpenAI-style API (``openai/protocol.py``), and the video job.

Requests allow unknown fields (OpenAI clients send extras through ``extra_body``), as SGLang's do.
Responses carry SGLang's fields in SGLang's order; the ones the reference server never fills are None.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from .media import VIDEO_COMPRESSION
from .specs import GenParams


class ImageRequest(BaseModel):
    """``POST /v1/images/generations`` (SGLang's ``ImageGenerationsRequest``, the fields the server uses)."""

    model_config = ConfigDict(extra="allow")

    prompt: str
    model: str | None = None
    n: int | None = 1
    response_format: str | None = None
    size: str | None = "1024x1024"
    background: str | None = "auto"
    output_format: str | None = None
    width: int | None = None
    height: int | None = None
    num_inference_steps: int | None = None
    guidance_scale: float | None = None
    seed: int | list[int] | None = None
    negative_prompt: str | None = None
    output_compression: int | None = None
    perf_dump_path: str | None = None


class VideoRequest(BaseModel):
    """``POST /v1/videos`` after multipart or ``extra_body`` merging (SGLang's ``VideoGenerationsRequest``)."""

    model_config = ConfigDict(extra="allow")

    prompt: str
    input_reference: str | None = None
    reference_url: str | None = None
    model: str | None = None
    n: int | None = 1
    num_outputs_per_prompt: int | None = None
    seconds: int | None = 4
    size: str | None = ""
    fps: int | None = None
    num_frames: int | None = None
    seed: int | list[int] | None = None
    width: int | None = None
    height: int | None = None
    num_inference_steps: int | None = None
    guidance_scale: float | None = None
    negative_prompt: str | None = None
    output_quality: str | None = "default"
    output_compression: int | None = None
    perf_dump_path: str | None = None


class ImageResponseData(BaseModel):
    """One image of an ``ImageResponse``."""

    b64_json: str | None = None
    url: str | None = None
    revised_prompt: str | None = None
    file_path: str | None = None
    resize: str | None = None


class ImageResponse(BaseModel):
    """The answer to ``POST /v1/images/generations`` and ``/v1/images/edits``."""

    id: str
    created: int
    data: list[ImageResponseData]
    peak_memory_mb: float | None = None
    inference_time_s: float | None = None
    usage: dict[str, Any] | None = None


class VideoResponse(BaseModel):
    """A video job as ``/v1/videos`` shows it."""

    id: str
    object: str = "video"
    model: str
    status: str
    progress: int
    created_at: int
    size: str
    seconds: str
    quality: str = "standard"
    url: str | None = None
    urls: list[str | None] | None = None
    remixed_from_video_id: str | None = None
    completed_at: int | None = None
    expires_at: int | None = None
    error: dict[str, Any] | None = None
    file_path: str | None = None
    file_paths: list[str | None] | None = None
    num_outputs: int | None = None
    peak_memory_mb: float | None = None
    inference_time_s: float | None = None
    revised_prompt: str | None = None
    action: dict[str, Any] | None = None
    lidar: dict[str, Any] | None = None


class VideoListResponse(BaseModel):
    """A page of ``GET /v1/videos``."""

    data: list[VideoResponse]
    object: str = "list"
    first_id: str | None
    last_id: str | None
    has_more: bool


class ModelCard(BaseModel):
    """One served model in ``/v1/models`` (OpenAI's model object plus SGLang's diffusion fields)."""

    id: str
    object: str = "model"
    created: int
    owned_by: str = "sglang"
    root: str
    parent: str | None = None
    max_model_len: int | None = None
    num_gpus: int
    task_type: str
    supported_task_types: list[str]
    dit_precision: str = "fp32"
    vae_precision: str = "fp32"
    pipeline_name: str
    pipeline_class: str


class ModelList(BaseModel):
    """``GET /v1/models``."""

    object: str = "list"
    data: list[ModelCard]


class ModelsInfo(BaseModel):
    """``GET /models``: the served model's diffusion details."""

    model_config = ConfigDict(protected_namespaces=())  # model_path is SGLang's name

    model_path: str
    num_gpus: int
    task_type: str
    supported_task_types: list[str]
    dit_precision: str = "fp32"
    vae_precision: str = "fp32"
    vae_decode_precision: str = "fp32"
    pipeline_name: str
    pipeline_class: str


class ServerInfo(BaseModel):
    """``GET /server_info``."""

    model_config = ConfigDict(protected_namespaces=())

    model_path: str
    served_model_name: str
    tp_size: int = 1
    dp_size: int = 1
    version: str


class ModelInfo(BaseModel):
    """``GET /model_info``: what the served model takes and makes."""

    model_config = ConfigDict(protected_namespaces=())

    model_path: str
    is_generation: bool = True
    model_type: str = "diffusion"
    architectures: list[str]
    has_image_understanding: bool
    has_audio_understanding: bool = False
    task_type: str
    supported_task_types: list[str]
    output_types: list[str]
    is_image_gen: bool


VIDEO_TEXT_FIELDS = ("prompt", "negative_prompt", "model", "size", "input_reference", "reference_url", "perf_dump_path")


@dataclass
class VideoJob:
    """A video job, shown with SGLang's ``VideoResponse`` fields."""

    id: str
    params: GenParams
    model: str
    perf_dump_path: str | None = None
    compression: int = VIDEO_COMPRESSION  # SGLang's output_compression, the MP4's quality
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "queued"
    progress: int = 0
    completed_at: int | None = None
    error: dict[str, str] | None = None
    content: bytes | None = None
    file_path: str | None = None
    inference_time_s: float | None = None

    def response(self) -> VideoResponse:
        p = self.params
        return VideoResponse(
            id=self.id,
            model=self.model,
            status=self.status,
            progress=self.progress,
            created_at=self.created_at,
            size=f"{p.width}x{p.height}",
            seconds=str(round(p.num_frames / p.fps)),
            completed_at=self.completed_at,
            error=self.error,
            file_path=self.file_path,
            file_paths=[self.file_path] if self.file_path else None,
            num_outputs=p.n if self.status == "completed" else None,
            inference_time_s=self.inference_time_s,
        )
