"""Ground-truth files: SGLang's names, lookup (platform subfolder first), reading and writing.

Image: ``<case>_<n>gpu.<ext>`` (ext from the output format: jpeg -> jpg, default png; other
extensions are tried too, as SGLang does). Video: ``<case>_<n>gpu_frame_<label>.png`` with the
labels of ``frames.FrameSpec`` (``0``, ``mid``, ``last`` by default).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from .._util.atomicfile import write_atomic
from ..errors import DiffperfError
from ..platforms import Platform
from ..protocol import IMAGE_EXTS, IMAGE_FORMAT_EXTS
from . import manifest


def image_ext(output_format: str | None) -> str:
    """File extension for an image output format (``jpeg`` -> ``jpg``, unset -> ``png``)."""
    fmt = (output_format or "png").lower().lstrip(".")
    return IMAGE_FORMAT_EXTS.get(fmt, fmt)


def gt_names(case_id: str, num_gpus: int, is_video: bool, ext: str, labels: list[str]) -> list[str]:
    """The GT file names of a case: one per compared frame."""
    stem = f"{case_id}_{num_gpus}gpu"
    if is_video:
        return [f"{stem}_frame_{label}.png" for label in labels]
    return [f"{stem}.{image_ext(ext)}"]


@dataclass(frozen=True)
class Located:
    """Where a case's GT lives: the folder used, the file per name (None where missing); ``tried``: every
    candidate of a lookup by SGLang's rules, in order (empty for a plain folder)."""

    folder: Path
    files: list[Path | None]
    tried: tuple[str, ...] = ()

    @property
    def missing(self) -> list[int]:
        return [i for i, f in enumerate(self.files) if f is None]


def locate(gt_dir: Path, platform: Platform | None, names: list[str], is_video: bool) -> Located:
    """Find the GT files; ``<gt_dir>/<platform>/`` wins when it holds any of the case's files."""
    folders = [gt_dir / platform, gt_dir] if platform else [gt_dir]
    best = Located(folders[-1], [None] * len(names))
    for folder in folders:
        found = Located(folder, [_find(folder, name, is_video) for name in names])
        if any(found.files):
            return found
    return best


def _find(folder: Path, name: str, is_video: bool) -> Path | None:
    candidates = [name]
    if not is_video:  # an image GT may have been stored with another extension
        stem, ext = name.rsplit(".", 1)
        candidates += [f"{stem}.{e}" for e in IMAGE_EXTS if e != ext]
    return next((folder / c for c in candidates if (folder / c).is_file()), None)


def decode(data: bytes) -> np.ndarray:
    """A GT file's pixels as uint8 RGB."""
    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB"))


def encode_png(frame: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG")
    return buf.getvalue()


def write(gt_dir: Path, files: dict[Path, bytes], *, record: bool = True) -> None:
    """Write GT files atomically and (``record``) their hashes in the manifest; none outside ``gt_dir``."""
    for path in files:
        if not path.resolve().is_relative_to(gt_dir.resolve()):
            raise DiffperfError(f"{path} would be written outside the ground-truth folder", source=str(gt_dir))
    for path, data in files.items():
        write_atomic(path, data)
    if record:
        manifest.record(gt_dir, files)
