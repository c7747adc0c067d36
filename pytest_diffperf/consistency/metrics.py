"""Per-frame metrics on uint8 RGB frames of identical shape, and the pass rule.

SSIM and PSNR are scikit-image's (7x7 uniform window, data range 255); the mean absolute
difference is over all pixels and channels (0-255); CLIP similarity is the cosine of two
L2-normalised embeddings. Pass iff clip, ssim, psnr >= and mad <= their thresholds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .thresholds import Thresholds

METRICS = ("clip", "ssim", "psnr", "mad")


@dataclass(frozen=True)
class FrameMetrics:
    clip: float
    ssim: float
    psnr: float  # math.inf for identical frames
    mad: float

    def failed(self, t: Thresholds) -> list[str]:
        """Names of the metrics that miss their threshold, in METRICS order."""
        ok = {
            "clip": self.clip >= t.clip,
            "ssim": self.ssim >= t.ssim,
            "psnr": self.psnr >= t.psnr,
            "mad": self.mad <= t.mad,
        }
        return [name for name in METRICS if not ok[name]]


def check_frame(frame: np.ndarray, what: str) -> None:
    """ValueError unless ``frame`` is an H x W x 3 uint8 array."""
    if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
        raise ValueError(f"{what} must be an HxWx3 uint8 RGB array, got {frame.dtype} {frame.shape}")


def ssim(out: np.ndarray, gt: np.ndarray) -> float:
    from skimage.metrics import structural_similarity  # scikit-image: only when outputs are compared

    return float(structural_similarity(out, gt, channel_axis=2, data_range=255))


def psnr(out: np.ndarray, gt: np.ndarray) -> float:
    """PSNR in dB; ``math.inf`` for identical frames (scikit-image would warn dividing by zero)."""
    if np.array_equal(out, gt):
        return math.inf
    from skimage.metrics import peak_signal_noise_ratio

    return float(peak_signal_noise_ratio(gt, out, data_range=255))


def mean_abs_diff(out: np.ndarray, gt: np.ndarray) -> float:
    return float(np.abs(out.astype(np.int16) - gt.astype(np.int16)).mean())


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two L2-normalised embeddings (their dot product)."""
    return float(np.dot(a.astype(np.float64), b.astype(np.float64)))


def pixel_metrics(out: np.ndarray, gt: np.ndarray, clip: float) -> FrameMetrics:
    """All four metrics of one frame pair, given its CLIP similarity; shapes must already match."""
    return FrameMetrics(clip=clip, ssim=ssim(out, gt), psnr=psnr(out, gt), mad=mean_abs_diff(out, gt))


def json_number(value: float) -> float | str:
    """A metric as JSON allows it: infinities and NaN as the strings "inf", "-inf", "nan"."""
    return value if math.isfinite(value) else str(value)
