"""Fault injection (all off by default), applied to non-warmup requests only.

Delays and jitter sleep *inside* the timed region of the stage or step they target, so they
show up in that stage's ``execution_time_ms`` (or in ``steps[N]``) and nowhere else.
"""

from __future__ import annotations

import math
import os
import random
import sys
import threading
import time
from dataclasses import dataclass, field

from ..protocol import DENOISING_STAGE, STANDARD_STAGES

STEP_PREFIX = "step:"


def parse_delay(text: str) -> tuple[str, float]:
    """``STAGE=MS`` or ``step:N=MS`` -> (target, ms); raises ValueError with a readable message."""
    target, sep, ms_text = text.partition("=")
    if not sep:
        raise ValueError(f"expected STAGE=MS or step:N=MS, got {text!r}")
    try:
        ms = float(ms_text)
    except ValueError:
        raise ValueError(f"delay must be a number of milliseconds, got {ms_text!r}") from None
    if not (math.isfinite(ms) and ms >= 0):
        raise ValueError(f"delay must be a finite number >= 0 of milliseconds, got {ms_text!r}")
    if target.startswith(STEP_PREFIX):
        index = target[len(STEP_PREFIX) :]
        if not index.isdigit():
            raise ValueError(f"step index must be a non-negative integer, got {index!r}")
        return f"{STEP_PREFIX}{int(index)}", ms
    if target not in STANDARD_STAGES:
        raise ValueError(f"unknown stage {target!r}; expected one of {', '.join(STANDARD_STAGES)} or step:N")
    return target, ms


@dataclass
class Faults:
    delays_ms: dict[str, float] = field(default_factory=dict)
    jitter_pct: float = 0.0
    crash_on_request: int | None = None
    hang_on_request: int | None = None
    fail_startup: bool = False
    output_noise: float = 0.0
    load_delay_ms: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def _sleep(self, target: str, elapsed_s: float) -> None:
        extra = self.delays_ms.get(target, 0.0) / 1000
        if self.jitter_pct > 0:
            extra += self._rng.uniform(0.0, self.jitter_pct / 100) * elapsed_s
        if extra > 0:
            time.sleep(extra)

    def after_stage(self, stage: str, elapsed_s: float) -> None:
        """Called at the end of a stage's timed region (DenoisingStage jitter is applied per step)."""
        self._sleep(stage, 0.0 if stage == DENOISING_STAGE else elapsed_s)

    def after_step(self, index: int, elapsed_s: float) -> None:
        self._sleep(f"{STEP_PREFIX}{index}", elapsed_s)

    def on_denoising_start(self, request_index: int) -> None:
        """Crash or hang the ``request_index``-th (1-based) non-warmup request mid-pipeline."""
        if request_index == self.crash_on_request:
            print(
                f"[refserver] injected crash on request {request_index}",
                file=sys.stderr,
                flush=True,
            )
            os._exit(1)
        if request_index == self.hang_on_request:
            print(
                f"[refserver] injected hang on request {request_index}",
                file=sys.stderr,
                flush=True,
            )
            threading.Event().wait()
