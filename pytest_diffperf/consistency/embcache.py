"""GT CLIP embeddings cached next to the GT: ``.clip-cache/<key>.npy``.

The key hashes the model, its weights and the GT file's sha256, so a changed GT file or another
model never reads a stale embedding. A cache that cannot be written (read-only GT) is skipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path

import numpy as np

from .._util.atomicfile import write_atomic

CACHE_DIR = ".clip-cache"


def cache_path(gt_file: Path, embedder_key: str, gt_sha256: str) -> Path:
    key = hashlib.sha256(f"{embedder_key}\n{gt_sha256}".encode()).hexdigest()[:32]
    return gt_file.parent / CACHE_DIR / f"{key}.npy"


def load(path: Path) -> np.ndarray | None:
    """The cached embedding, or None if absent or unreadable."""
    try:
        emb = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    return emb if emb.ndim == 1 and emb.dtype == np.float32 else None


def store(path: Path, emb: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, emb.astype(np.float32), allow_pickle=False)
    with contextlib.suppress(OSError):  # a read-only GT folder: the next process embeds the GT again
        write_atomic(path, buf.getvalue())
