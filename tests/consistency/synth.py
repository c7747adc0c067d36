"""Synthetic test frames (fixed seeds) and the default thresholds."""

from __future__ import annotations

import numpy as np

from pytest_diffperf.consistency.thresholds import BUILTIN_DEFAULTS

IMAGE_T = BUILTIN_DEFAULTS["image"]
VIDEO_T = BUILTIN_DEFAULTS["video"]


def scene(seed: int, h: int = 48, w: int = 64) -> np.ndarray:
    """A reproducible uint8 RGB picture: gradients, a disc, a bar and some noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    cy, cx, r = rng.uniform(0.3, 0.7) * h, rng.uniform(0.3, 0.7) * w, rng.uniform(0.15, 0.3) * min(h, w)
    disc = ((y - cy) ** 2 + (x - cx) ** 2 < r * r) * rng.uniform(60, 120)
    img = np.stack([x / w * 200, y / h * 200, (x + y) / (h + w) * 255], axis=2) + disc[..., None]
    img[h // 3 : h // 3 + 4] = rng.uniform(0, 255, 3)
    img += rng.normal(0, 6, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def video(n: int = 9, seed: int = 0, h: int = 48, w: int = 64) -> list[np.ndarray]:
    return [scene(seed * 1000 + i, h, w) for i in range(n)]


def noisy(frame: np.ndarray, sigma: float, seed: int = 99) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(frame + rng.normal(0, sigma, frame.shape), 0, 255).astype(np.uint8)
