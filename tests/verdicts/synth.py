"""Synthetic timings for the verdict tests: per-process offsets plus heavy-tailed request noise, seeded."""

from __future__ import annotations

import numpy as np

from pytest_diffperf.verdicts.abstats import ProcessPairSamples
from pytest_diffperf.verdicts.metrics import request_metrics
from pytest_diffperf.verdicts.vocab import Order

STAGE_MS = {"TextEncodingStage": 9.0, "DenoisingStage": 280.0, "DecodingStage": 100.0}
STEPS = 16


def log_ratios(
    rng: np.random.Generator, trials: int, k: int, m: int, *, between: float, within: float, effect: float = 0.0
) -> np.ndarray:
    """A/A-like log ratios ``(trials, k, m)``: offsets ~ N(0, between), request pairs ~ t(4) scaled to sd ``within``."""
    offsets = rng.normal(0.0, between, size=(trials, k, 1))
    noise = rng.standard_t(4, size=(trials, k, m)) * within / np.sqrt(2.0)  # var of t(4) is 2
    return effect + offsets + noise


class FakePipeline:
    """A stand-in for one base/candidate server pair: stage times with process offsets and noise.

    ``slowdown`` maps a stage to the candidate's factor on it; e2e is the sum of stages plus 10 ms.
    """

    def __init__(self, seed: int, slowdown: dict[str, float] | None = None, *, offset_sd: float = 0.03):
        self.rng = np.random.default_rng(seed)
        self.slowdown = slowdown or {}
        self.offset_sd = offset_sd

    def _request(self, level: float, offsets: dict[str, float], factor: dict[str, float]) -> dict[str, float]:
        stages = {
            s: ms * level * float(np.exp(offsets[s] + self.rng.normal(0, 0.06))) * factor.get(s, 1.0)
            for s, ms in STAGE_MS.items()
        }
        step = stages["DenoisingStage"] / STEPS
        return request_metrics(sum(stages.values()) + 10.0, stages, [step] * STEPS)

    def __call__(self, index: int, orders: tuple[Order, ...], start: Order) -> ProcessPairSamples:
        offsets = {
            arm: {s: float(self.rng.normal(0, self.offset_sd)) for s in STAGE_MS} for arm in ("base", "candidate")
        }
        base, cand = [], []
        for _ in orders:
            level = float(np.exp(self.rng.normal(0, 0.08)))  # the machine's slow phase hits both requests of a pair
            base.append(self._request(level, offsets["base"], {}))
            cand.append(self._request(level, offsets["candidate"], self.slowdown))
        loads = self.rng.lognormal(np.log(4000), 0.1, size=2)
        return ProcessPairSamples(base, cand, float(loads[0]), float(loads[1]))
