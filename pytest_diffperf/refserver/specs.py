"""Model registry and request parameters; importable without torch (the CLI and HTTP layer use it).

Request fields become a checked ``GenParams`` the way SGLang's ``build_sampling_params`` does it:
explicit ``width``/``height`` win over ``size``, ``""`` means the model default, frame counts are
adjusted (never rejected) to what the model's VAE needs and to the GPU count, ``n`` is clamped to
[1, 10], and each output gets its own seed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import numpy.typing as npt

DEFAULT_PROMPT = "a lighthouse on a cliff at sunset"
DEFAULT_SEED = 42  # SGLang's SamplingParams.seed default
DEFAULT_FPS = 24  # SGLang's openai/utils.py DEFAULT_FPS
DEFAULT_VIDEO_SECONDS = 4
MAX_OUTPUTS = 10  # SGLang clamps n to [1, 10]
TEMPORAL_COMPRESSION = 4  # the Wan VAE's frames per latent frame
_SIZE = re.compile(r"^\s*(\d{1,5})\s*[xX*]\s*(\d{1,5})\s*$")


class TaskType(str, Enum):
    """SGLang's ``ModelTaskType`` names for what the built-in models do."""

    T2I = "T2I"
    TI2I = "TI2I"
    T2V = "T2V"
    I2V = "I2V"

    @property
    def is_video(self) -> bool:
        return self in (TaskType.T2V, TaskType.I2V)

    @property
    def accepts_image(self) -> bool:
        return self in (TaskType.TI2I, TaskType.I2V)

    @property
    def requires_image(self) -> bool:
        return self == TaskType.I2V

    @property
    def output_type(self) -> str:
        return "VIDEO" if self.is_video else "IMAGE"


@dataclass(frozen=True)
class GenParams:
    """One generation, with every default applied."""

    prompt: str
    negative_prompt: str
    width: int
    height: int
    steps: int
    guidance_scale: float
    seeds: tuple[int, ...]  # one per output
    num_frames: int = 1
    fps: int = DEFAULT_FPS
    image: npt.NDArray[np.uint8] | None = field(default=None, compare=False)  # uint8 (H, W, 3) condition image

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def seed(self) -> int:
        return self.seeds[0]


@dataclass(frozen=True)
class ModelSpec:
    """A servable model: the family whose staged pipeline runs it, its task, and its request defaults."""

    name: str
    family: str  # key of modules.MODULE_BUILDERS and families.FAMILIES
    task_type: TaskType
    width: int
    height: int
    steps: int
    guidance_scale: float
    size_multiple: int
    max_side: int
    pipeline_class: str  # the diffusers pipeline whose stage math the family follows
    min_side: int = 64
    max_frames: int = 1

    @property
    def is_video(self) -> bool:
        return self.task_type.is_video

    @property
    def pipeline_name(self) -> str:
        return self.name.split("/", 1)[-1]

    def params(
        self,
        *,
        seed: int | list[int] | None = None,
        prompt: str = DEFAULT_PROMPT,
        negative_prompt: str | None = None,
        size: str | None = None,
        width: int | None = None,
        height: int | None = None,
        num_inference_steps: int | None = None,
        guidance_scale: float | None = None,
        n: int | None = 1,
        num_frames: int | None = None,
        fps: int | None = None,
        num_gpus: int = 1,
        image: npt.NDArray[np.uint8] | None = None,
        **_ignored: Any,
    ) -> GenParams:
        """Request fields -> checked GenParams; raises ValueError with a client-facing message."""
        if size:
            parsed_w, parsed_h = parse_size(size)
            width = parsed_w if width is None else width
            height = parsed_h if height is None else height
        for name, value in (("width", width), ("height", height), ("num_inference_steps", num_inference_steps)):
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive")
        if image is not None and (width is None or height is None):
            width, height = self._fit(image.shape[1], image.shape[0])
        count = max(1, min(int(n or 1), MAX_OUTPUTS))
        seeds = _seeds(seed, count)
        frames = 1
        if self.is_video:
            frames = self.adjust_num_frames(num_frames if num_frames is not None else DEFAULT_FPS, num_gpus)
        p = GenParams(
            prompt=prompt,
            negative_prompt=negative_prompt or "",
            width=self.width if width is None else width,
            height=self.height if height is None else height,
            steps=self.steps if num_inference_steps is None else num_inference_steps,
            guidance_scale=self.guidance_scale if guidance_scale is None else guidance_scale,
            seeds=seeds,
            num_frames=frames,
            fps=fps or DEFAULT_FPS,
            image=image,
        )
        self.check(p)
        return p

    def _fit(self, width: int, height: int) -> tuple[int, int]:
        """An input image's size, rounded down to the model's multiple and clamped to its range."""
        m = self.size_multiple

        def side(v: int) -> int:
            return min(self.max_side, max(self.min_side, v // m * m))

        return side(width), side(height)

    def adjust_num_frames(self, num_frames: int, num_gpus: int) -> int:
        """The frame count the model runs: 4k+1 for the VAE, then latent frames divisible by ``num_gpus``.

        As SGLang's ``adjust_num_frames`` (diffusers' Wan rounding) and ``align_num_frames_for_num_gpus``.
        """
        if num_frames <= 0:
            raise ValueError("num_frames must be positive")
        if num_frames % TEMPORAL_COMPRESSION != 1:
            num_frames = num_frames // TEMPORAL_COMPRESSION * TEMPORAL_COMPRESSION + 1
        latent = (num_frames - 1) // TEMPORAL_COMPRESSION + 1
        if num_gpus > 1 and latent % num_gpus:
            latent = math.ceil(latent / num_gpus) * num_gpus
            num_frames = (latent - 1) * TEMPORAL_COMPRESSION + 1
        return num_frames

    def check(self, p: GenParams) -> None:
        """Raise ValueError unless ``p`` can run on this model."""
        for side, value in (("width", p.width), ("height", p.height)):
            if not self.min_side <= value <= self.max_side or value % self.size_multiple:
                raise ValueError(
                    f"{side} must be a multiple of {self.size_multiple} in [{self.min_side}, {self.max_side}]"
                    f" for {self.name}, got {value}"
                )
        if p.steps < 1:
            raise ValueError(f"num_inference_steps must be positive, got {p.steps}")
        if self.is_video and p.num_frames > self.max_frames:
            raise ValueError(f"num_frames must be at most {self.max_frames} for {self.name}, got {p.num_frames}")
        if self.task_type.requires_image and p.image is None:
            raise ValueError(
                f"Served model with task type '{self.task_type.value}' requires an 'image_path' input,"
                " but none was provided"
            )
        if not self.task_type.accepts_image and p.image is not None:
            raise ValueError(f"input_reference is not supported for {self.task_type.value} models.")


def _seeds(seed: int | list[int] | None, count: int) -> tuple[int, ...]:
    """One seed per output: an int seeds output i with ``seed + i``, a list gives each output its own."""
    if seed is None:
        seed = DEFAULT_SEED
    if isinstance(seed, list):
        if not seed:
            raise ValueError("seed list must not be empty")
        if len(seed) == 1:
            return tuple(seed[0] + i for i in range(count))
        if len(seed) != count:
            raise ValueError(f"seed list has {len(seed)} entries for n={count} outputs")
        return tuple(seed)
    return tuple(seed + i for i in range(count))


def parse_size(size: str) -> tuple[int, int]:
    """``"WxH"`` -> (width, height)."""
    match = _SIZE.match(size)
    if not match or int(match[1]) <= 0 or int(match[2]) <= 0:
        raise ValueError("size must be formatted as positive WIDTHxHEIGHT")
    return int(match[1]), int(match[2])


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("tiny/flux-t2i", "flux", TaskType.T2I, 256, 256, 12, 3.5, 16, 1024, "FluxPipeline"),
        ModelSpec("tiny/sd-t2i", "sd", TaskType.T2I, 256, 256, 12, 5.0, 16, 1024, "StableDiffusionPipeline"),
        ModelSpec(
            "tiny/flux-kontext-edit", "flux-kontext", TaskType.TI2I, 128, 128, 8, 2.5, 16, 512, "FluxKontextPipeline"
        ),
        ModelSpec(
            "tiny/wan-t2v", "wan", TaskType.T2V, 128, 128, 6, 5.0, 16, 512, "WanPipeline", max_frames=129
        ),
        ModelSpec(
            "tiny/wan-i2v", "wan-i2v", TaskType.I2V, 128, 128, 6, 5.0, 16, 512, "WanImageToVideoPipeline",
            max_frames=129,
        ),
    )
}  # fmt: skip
