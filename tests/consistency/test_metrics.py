"""Metric functions agree with scikit-image; thresholds apply with the right direction."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from pytest_diffperf.consistency import metrics
from pytest_diffperf.consistency.metrics import FrameMetrics
from pytest_diffperf.consistency.thresholds import Thresholds

from .synth import noisy, scene


@pytest.mark.parametrize("sigma", [2.0, 10.0, 40.0])
def test_metrics_agree_with_scikit_image(sigma):
    gt = scene(1, 64, 96)
    out = noisy(gt, sigma)
    assert metrics.ssim(out, gt) == structural_similarity(out, gt, channel_axis=2, data_range=255)
    assert metrics.psnr(out, gt) == peak_signal_noise_ratio(gt, out, data_range=255)
    expected_mad = np.abs(out.astype(np.float64) - gt.astype(np.float64)).mean()
    assert metrics.mean_abs_diff(out, gt) == pytest.approx(expected_mad, abs=1e-12)


def test_identical_frames_pass_and_serialise():
    gt = scene(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero warning from PSNR
        m = metrics.pixel_metrics(gt.copy(), gt, clip=1.0)
    assert (m.ssim, m.psnr, m.mad) == (1.0, math.inf, 0.0)
    assert m.failed(Thresholds(clip=1.0, ssim=1.0, psnr=1e9, mad=0.0)) == []
    assert json.dumps([metrics.json_number(m.psnr)], allow_nan=False) == '["inf"]'


def test_cosine_of_normalised_vectors():
    a = np.array([0.6, 0.8], np.float32)
    assert metrics.cosine(a, a) == pytest.approx(1.0)
    assert metrics.cosine(a, np.array([0.8, -0.6], np.float32)) == pytest.approx(0.0)


T = Thresholds(clip=0.9, ssim=0.9, psnr=30.0, mad=5.0)


@pytest.mark.parametrize(
    "values, failed",
    [
        (dict(clip=0.9, ssim=0.9, psnr=30.0, mad=5.0), []),  # exactly at every threshold passes
        (dict(clip=0.8999, ssim=0.9, psnr=30.0, mad=5.0), ["clip"]),
        (dict(clip=0.9, ssim=0.8999, psnr=30.0, mad=5.0), ["ssim"]),
        (dict(clip=0.9, ssim=0.9, psnr=29.99, mad=5.0), ["psnr"]),
        (dict(clip=0.9, ssim=0.9, psnr=30.0, mad=5.01), ["mad"]),  # mad is a maximum
        (dict(clip=1.0, ssim=1.0, psnr=math.inf, mad=0.0), []),
        (dict(clip=0.1, ssim=0.1, psnr=10.0, mad=50.0), ["clip", "ssim", "psnr", "mad"]),
    ],
)
def test_threshold_directions(values, failed):
    assert FrameMetrics(**values).failed(T) == failed


@pytest.mark.parametrize(
    "frame", [np.zeros((8, 8, 3), np.float32), np.zeros((8, 8), np.uint8), np.zeros((8, 8, 4), np.uint8)]
)
def test_only_uint8_rgb_frames(frame):
    with pytest.raises(ValueError, match="HxWx3 uint8 RGB"):
        metrics.check_frame(frame, "output frame 0")
