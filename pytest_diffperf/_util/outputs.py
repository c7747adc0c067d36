"""Output files checked before any work: a path that cannot be written is an error up front, not at the end."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..errors import DiffperfError


def check_writable(path: Path, source: str) -> None:
    """DiffperfError (naming ``source``, the option) unless ``path`` can be written: it is not a folder, and it
    is a writable file or its nearest existing folder is writable (missing folders are created when written)."""
    path = Path(path)
    if path.is_dir():
        raise DiffperfError(f"{path} is a folder; expected a file path", source=source)
    if path.exists():
        if not os.access(path, os.W_OK):
            raise DiffperfError(f"cannot write {path}: permission denied", source=source)
        return
    folder = path.parent
    while not folder.exists():
        if folder.is_symlink():  # a dangling link
            raise DiffperfError(f"cannot create {path}: {folder} is a broken symlink", source=source)
        folder = folder.parent
    if not folder.is_dir():
        raise DiffperfError(f"cannot create {path}: {folder} is not a folder", source=source)
    try:
        with tempfile.TemporaryFile(dir=folder):  # a real write: permission bits do not bind root, nor read-only mounts
            pass
    except OSError as exc:
        raise DiffperfError(f"cannot create {path}: {folder} is not writable ({exc.strerror})", source=source) from None
