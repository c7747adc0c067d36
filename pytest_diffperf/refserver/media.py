"""Encoding of generated frames: PNG/JPEG images (deterministic bytes) and H.264 MP4 videos."""

from __future__ import annotations

import io
import os
import tempfile

import numpy as np
import numpy.typing as npt
from PIL import Image

from ..protocol import IMAGE_FORMAT_EXTS

IMAGE_FORMATS = {"png": "PNG", "jpg": "JPEG", "webp": "WEBP"}
JPEG_QUALITY = 75  # SGLang's output_quality "default" for images
VIDEO_COMPRESSION = 50  # SGLang's output_quality "default" for videos: imageio quality 5, CRF 25
OUTPUT_QUALITIES = {"maximum": 100, "high": 90, "medium": 55, "low": 35}  # SGLang's output_quality -> compression


def choose_image_ext(output_format: str | None, background: str | None) -> str:
    """The file type of an image output, as SGLang's ``choose_output_image_ext``: JPEG unless asked otherwise."""
    fmt = (output_format or "").lower()
    if fmt in IMAGE_FORMAT_EXTS:
        return IMAGE_FORMAT_EXTS[fmt]
    if (background or "auto").lower() == "transparent":
        return "png"
    return "jpg"


def encode_image(frame: npt.NDArray[np.uint8], ext: str) -> bytes:
    """Encode one (H, W, 3) uint8 frame as PNG, JPEG or WebP (no metadata, so bytes depend on pixels only)."""
    buf = io.BytesIO()
    fmt = IMAGE_FORMATS[ext]
    Image.fromarray(frame).save(buf, format=fmt, **({"quality": JPEG_QUALITY} if fmt != "PNG" else {}))
    return buf.getvalue()


def video_compression(output_quality: str | None, output_compression: int | None) -> int:
    """A video's ``output_compression`` as SGLang resolves it: the given one, else its ``output_quality``'s;
    raises ValueError with SGLang's message for an unknown quality."""
    if output_compression is not None:
        return output_compression
    if output_quality is None or output_quality == "default":
        return VIDEO_COMPRESSION
    if output_quality not in OUTPUT_QUALITIES:
        valid = [*OUTPUT_QUALITIES, "default"]
        raise ValueError(f"Invalid output_quality {output_quality!r}. Expected one of: {valid}")
    return OUTPUT_QUALITIES[output_quality]


def encode_mp4(frames: npt.NDArray[np.uint8], fps: int, compression: int = VIDEO_COMPRESSION) -> bytes:
    """Encode (F, H, W, 3) uint8 frames as an H.264 MP4 (libx264, yuv420p, sizes kept as given) at SGLang's
    imageio quality ``compression / 10`` (CRF ``int((1 - quality / 10) * 51)``: 100 is CRF 0, so frame
    comparisons measure the model, not the encoder); imageio refuses a quality below 1."""
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
            quality=compression / 10,
            macro_block_size=1,
            pixelformat="yuv420p",
            ffmpeg_log_level="error",
            ffmpeg_params=["-threads", "1"],
        ) as writer:
            for frame in frames:
                writer.append_data(frame)  # type: ignore[attr-defined]  # the FFMPEG writer's method, untyped
        with open(path, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(path)
