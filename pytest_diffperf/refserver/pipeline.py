"""Staged execution: runs a family's stages in SGLang order, timing each stage and each step."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from ..protocol import (
    DECODING_STAGE,
    DENOISING_STAGE,
    INPUT_VALIDATION_STAGE,
    LATENT_PREPARATION_STAGE,
    TEXT_ENCODING_STAGE,
    TIMESTEP_PREPARATION_STAGE,
)
from .families import FAMILIES, StageState
from .faults import Faults
from .memory import MemoryTracker
from .modules import build_modules
from .specs import GenParams, ModelSpec

NOISE_SEED_OFFSET = 0x5EED


@dataclass
class RunResult:
    frames: npt.NDArray[np.uint8]  # (n, H, W, 3) for images, (n, F, H, W, 3) for videos
    stages: list[tuple[str, float]]  # (stage name, ms) in execution order
    steps: list[float]  # ms per denoise step
    total_ms: float


class StagedPipeline:
    """One loaded model. Not thread-safe: the server runs it from a single worker thread."""

    def __init__(self, spec: ModelSpec, faults: Faults, memory: MemoryTracker):
        self.spec = spec
        self.faults = faults
        self.memory = memory
        self.family = FAMILIES[spec.family](build_modules(spec.family))
        self.requests = 0  # non-warmup requests started so far
        memory.sample()

    def run(
        self,
        p: GenParams,
        *,
        warmup: bool = False,
        on_step: Callable[[int, int], None] | None = None,
    ) -> RunResult:
        faults = None if warmup else self.faults
        if not warmup:
            self.requests += 1
        index = self.requests
        stages: list[tuple[str, float]] = []
        steps: list[float] = []

        @contextmanager
        def stage(name: str) -> Iterator[None]:
            t0 = time.perf_counter()
            yield
            if faults:
                faults.after_stage(name, time.perf_counter() - t0)
            stages.append((name, (time.perf_counter() - t0) * 1000))
            self.memory.sample()

        family = self.family
        ctx: StageState = {}
        with torch.inference_mode():
            start = time.perf_counter()
            with stage(INPUT_VALIDATION_STAGE):
                self.spec.check(p)
                generators = [torch.Generator("cpu").manual_seed(seed) for seed in p.seeds]
            with stage(TEXT_ENCODING_STAGE):
                family.encode_text(p, ctx)
            with stage(LATENT_PREPARATION_STAGE):
                family.prepare_latents(p, ctx, generators)
            with stage(TIMESTEP_PREPARATION_STAGE):
                timesteps = family.prepare_timesteps(p, ctx)
            with stage(DENOISING_STAGE):
                if faults:
                    faults.on_denoising_start(index)
                for i, t in enumerate(timesteps):
                    t0 = time.perf_counter()
                    family.denoise_step(p, ctx, t)
                    if faults:
                        faults.after_step(i, time.perf_counter() - t0)
                    steps.append((time.perf_counter() - t0) * 1000)
                    self.memory.sample()
                    if on_step:
                        on_step(i + 1, len(timesteps))
            with stage(DECODING_STAGE):
                images = family.decode(p, ctx)
                if faults and faults.output_noise > 0:
                    noise_gen = torch.Generator("cpu").manual_seed(p.seed + NOISE_SEED_OFFSET)
                    images = (images + faults.output_noise * torch.randn(images.shape, generator=noise_gen)).clamp(0, 1)
                frames = (images * 255).round().to(torch.uint8).numpy()
            total_ms = (time.perf_counter() - start) * 1000
        return RunResult(frames, stages, steps, total_ms)
