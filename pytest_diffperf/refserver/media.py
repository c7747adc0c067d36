"""Encoding of generated frames: PNG/JPEG images (deterministic bytes) and H.264 MP4 videos."""

from __future__ import annotations

import io
import os
import tempfile

import numpy as np
from PIL import Image

IMAGE_FORMATS = {"png": "PNG", "jpeg": "JPEG", "jpg": "JPEG"}


def encode_image(frame: np.ndarray, output_format: str) -> bytes:
    """Encode one (H, W, 3) uint8 frame as PNG or JPEG (no metadata, so bytes depend on pixels only)."""
    buf = io.BytesIO()
    fmt = IMAGE_FORMATS[output_format]
    Image.fromarray(frame).save(buf, format=fmt, **({"quality": 90} if fmt == "JPEG" else {}))
    return buf.getvalue()


def encode_mp4(frames: np.ndarray, fps: int) -> bytes:
    """Encode (F, H, W, 3) uint8 frames as an H.264 MP4 (libx264, yuv420p, sizes kept as given)."""
    import imageio.v2 as imageio

    fd, path = tempfile.mkstemp(suffix=".mp4", prefix="refserver-")
    os.close(fd)
    try:
        with imageio.get_writer(
            path,
            format="FFMPEG",
            mode="I",
            fps=fps,
            codec="libx264",
            macro_block_size=1,
            pixelformat="yuv420p",
            ffmpeg_log_level="error",
            ffmpeg_params=["-threads", "1"],
        ) as writer:
            for frame in frames:
                writer.append_data(frame)
        with open(path, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(path)
