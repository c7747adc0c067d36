"""Request and response shapes of SGLang's OpenAI-style API (``openai/protocol.py``), and the video job.

Requests allow unknown fields (OpenAI clients send extras through ``extra_body``), as SGLang's do.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

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
    perf_dump_path: str | None = None


VIDEO_TEXT_FIELDS = ("prompt", "negative_prompt", "model", "size", "input_reference", "reference_url", "perf_dump_path")


@dataclass
class VideoJob:
    """A video job, shown with SGLang's ``VideoResponse`` fields."""

    id: str
    params: GenParams
    model: str
    perf_dump_path: str | None = None
    created_at: int = field(default_factory=lambda: int(time.time()))
    status: str = "queued"
    progress: int = 0
    completed_at: int | None = None
    error: dict[str, Any] | None = None
    content: bytes | None = None
    file_path: str | None = None
    inference_time_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        p = self.params
        return {
            "id": self.id,
            "object": "video",
            "model": self.model,
            "status": self.status,
            "progress": self.progress,
            "created_at": self.created_at,
            "size": f"{p.width}x{p.height}",
            "seconds": str(round(p.num_frames / p.fps)),
            "quality": "standard",
            "url": None,
            "urls": None,
            "remixed_from_video_id": None,
            "completed_at": self.completed_at,
            "expires_at": None,
            "error": self.error,
            "file_path": self.file_path,
            "file_paths": [self.file_path] if self.file_path else None,
            "num_outputs": p.n if self.status == "completed" else None,
            "peak_memory_mb": None,
            "inference_time_s": self.inference_time_s,
            "revised_prompt": None,
            "action": None,
            "lidar": None,
        }
