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


def av_clip(freq: float = 440.0, amp: float = 0.3, seconds: float = 1.0, frames: int = 5, audio: bool = True) -> bytes:
    """An MP4 of ``frames`` scenes (mpeg4) with a sine tone (AAC, mono, 48 kHz) as its sound track."""
    import fractions
    import io

    import av

    buf = io.BytesIO()
    with av.open(buf, "w", format="mp4") as out:
        video = out.add_stream("mpeg4", rate=4)
        video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        sound = out.add_stream("aac", rate=48_000) if audio else None
        if sound is not None:
            sound.layout = "mono"
        for i in range(frames):
            for packet in video.encode(av.VideoFrame.from_ndarray(scene(i), format="rgb24")):
                out.mux(packet)
        for packet in video.encode(None):
            out.mux(packet)
        if sound is not None:
            t = np.arange(int(48_000 * seconds)) / 48_000
            tone = (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)
            for start in range(0, tone.size, 1024):
                frame = av.AudioFrame.from_ndarray(tone[None, start : start + 1024], format="flt", layout="mono")
                frame.sample_rate, frame.pts, frame.time_base = 48_000, start, fractions.Fraction(1, 48_000)
                for packet in sound.encode(frame):
                    out.mux(packet)
            for packet in sound.encode(None):
                out.mux(packet)
    return buf.getvalue()
