"""Ground truth checked before any server starts: the manifest, and each case's GT files (inside the folder,
readable, images). The same reads serve the check itself, so a bad file is one clear error naming it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import DiffperfError
from . import groundtruth, manifest
from .config import ConsistencyConfig

GTCase = tuple[str, int, bool, str]  # case id, num_gpus, is_video, image extension


def read_gt(gt_dir: Path, path: Path) -> bytes:
    """A GT file's bytes; DiffperfError if it resolves outside ``gt_dir`` (a symlink out) or cannot be read."""
    resolved = path.resolve()
    if not resolved.is_relative_to(gt_dir.resolve()):
        raise DiffperfError(f"resolves to {resolved}, outside the ground-truth folder {gt_dir}", source=str(path))
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DiffperfError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None


def decode_gt(path: Path, data: bytes) -> np.ndarray:
    """A GT file's pixels; DiffperfError naming the file if it is not an image."""
    try:
        return groundtruth.decode(data)
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:  # UnidentifiedImageError: OSError
        raise DiffperfError(f"not a readable image: {exc}", source=str(path)) from None


def case_gt_files(cfg: ConsistencyConfig, case: GTCase) -> list[Path]:
    """The GT files a case would be compared with (image: its name in any extension; video: every frame)."""
    assert cfg.gt_dir is not None
    case_id, num_gpus, is_video, ext = case
    folders = [cfg.gt_dir / cfg.platform, cfg.gt_dir] if cfg.platform else [cfg.gt_dir]
    for folder in folders:
        if is_video:
            found = sorted(folder.glob(f"{case_id}_{num_gpus}gpu_frame_*.png"))
        else:
            name = groundtruth.gt_names(case_id, num_gpus, False, ext, [""])[0]
            found = [p for p in [groundtruth.locate(folder, None, [name], False).files[0]] if p is not None]
        if found:
            return found
    return []


def check_ground_truth(cfg: ConsistencyConfig, cases: Iterable[GTCase]) -> None:
    """DiffperfError on the first problem: a manifest that does not load, a GT file outside the folder,
    unreadable, not the one the manifest records, or not an image. Missing GT is no error here (the test reports it, with the files to add)."""
    if cfg.regen or cfg.skip or cfg.gt_dir is None or cfg.sglang is not None or not cfg.gt_dir.is_dir():
        return  # SGLang's lookup (a remote source, a data-repository clone) reads a case's GT when it is compared
    recorded = manifest.load(cfg.gt_dir)
    for case in cases:
        for path in case_gt_files(cfg, case):
            data = read_gt(cfg.gt_dir, path)
            problem = recorded and manifest.integrity_problem(cfg.gt_dir, recorded, path, manifest.sha256(data))
            if problem:  # a changed or unlisted GT file: found now, not once per case after its server ran
                raise DiffperfError(
                    f"{problem} (record it again: {manifest.RECORD_COMMAND.format(gt_dir=cfg.gt_dir)})",
                    source=str(path),
                )
            decode_gt(path, data)
