"""Model registry and request parameters; importable without torch (the CLI and HTTP layer use it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_PROMPT = "a lighthouse on a cliff at sunset"
_SIZE = re.compile(r"^\s*(\d{1,5})\s*[xX*]\s*(\d{1,5})\s*$")


@dataclass(frozen=True)
class GenParams:
    """One generation, with every default applied."""

    prompt: str
    negative_prompt: str
    width: int
    height: int
    steps: int
    guidance_scale: float
    seed: int
    n: int = 1
    num_frames: int = 1


@dataclass(frozen=True)
class ModelSpec:
    """A servable model: the family whose staged pipeline runs it, and its request defaults."""

    name: str
    family: str  # key of modules.MODULE_BUILDERS and families.FAMILIES
    task: str  # "image" | "video"
    width: int
    height: int
    steps: int
    guidance_scale: float
    size_multiple: int
    max_side: int
    min_side: int = 64
    num_frames: int = 1
    fps: int = 8
    max_frames: int = 1

    def params(
        self,
        *,
        seed: int,
        prompt: str = DEFAULT_PROMPT,
        negative_prompt: str | None = None,
        size: str | None = None,
        width: int | None = None,
        height: int | None = None,
        num_inference_steps: int | None = None,
        guidance_scale: float | None = None,
        n: int = 1,
        num_frames: int | None = None,
    ) -> GenParams:
        """Request fields -> checked GenParams; raises ValueError with a client-facing message."""
        if size is not None:
            width, height = parse_size(size)
        p = GenParams(
            prompt=prompt,
            negative_prompt=negative_prompt or "",
            width=self.width if width is None else width,
            height=self.height if height is None else height,
            steps=self.steps if num_inference_steps is None else num_inference_steps,
            guidance_scale=self.guidance_scale if guidance_scale is None else guidance_scale,
            seed=seed,
            n=n,
            num_frames=self.num_frames if num_frames is None else num_frames,
        )
        self.check(p)
        return p

    def check(self, p: GenParams) -> None:
        """Raise ValueError unless ``p`` can run on this model."""
        for side, value in (("width", p.width), ("height", p.height)):
            if not self.min_side <= value <= self.max_side or value % self.size_multiple:
                raise ValueError(
                    f"{side} must be a multiple of {self.size_multiple} in [{self.min_side}, {self.max_side}]"
                    f" for {self.name}, got {value}"
                )
        if p.steps < 1:
            raise ValueError(f"num_inference_steps must be >= 1, got {p.steps}")
        if self.task == "video" and not (1 <= p.num_frames <= self.max_frames and p.num_frames % 4 == 1):
            raise ValueError(f"num_frames must be 4k+1 in [1, {self.max_frames}] for {self.name}, got {p.num_frames}")


def parse_size(size: str) -> tuple[int, int]:
    """``"WxH"`` -> (width, height)."""
    match = _SIZE.match(size)
    if not match:
        raise ValueError(f"size must look like WIDTHxHEIGHT (e.g. 256x256), got {size!r}")
    return int(match[1]), int(match[2])


def frames_for(seconds: float, fps: int) -> int:
    """Frame count for a duration, rounded down to the 4k+1 the video VAE needs (as WanPipeline does)."""
    return max(0, round(seconds * fps)) // 4 * 4 + 1


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec("tiny/flux-t2i", "flux", "image", 256, 256, 12, 3.5, 16, 1024),
        ModelSpec("tiny/sd-t2i", "sd", "image", 256, 256, 12, 5.0, 16, 1024),
        ModelSpec(
            "tiny/wan-t2v",
            "wan",
            "video",
            128,
            128,
            6,
            5.0,
            16,
            512,
            num_frames=9,
            fps=8,
            max_frames=33,
        ),
    )
}
