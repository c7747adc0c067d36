"""Output paths checked before any work: a path that cannot be written, or that names a file the run reads, is
an error up front (naming the option), not at the end of the run or after the input was replaced."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import DiffperfError

Inputs = Iterable[tuple[Path, str]]  # (a file or folder the run reads, the option or argument that names it)


def check_writable(path: Path, source: str, reads: Inputs = ()) -> None:
    """DiffperfError (naming ``source``, the option) unless ``path`` can be written: it is not a folder, and it
    is a writable file or its nearest existing folder is writable (missing folders are created when written);
    and it is none of the files ``reads`` lists, nor inside one of its folders."""
    path = Path(path)
    if path.is_dir():
        raise DiffperfError(f"{path} is a folder; expected a file path", source=source)
    check_not_read(path, source, reads)
    if path.exists():
        if not path.is_file():  # a device, FIFO or socket: the file is replaced whole, never written into one
            raise DiffperfError(f"{path} is a device, FIFO or socket; expected a file path", source=source)
        if not os.access(path, os.W_OK):
            raise DiffperfError(f"cannot write {path}: permission denied", source=source)
        return
    _check_creatable(path, source)


def check_folder(path: Path, source: str, reads: Inputs = ()) -> None:
    """DiffperfError unless files can be written into the folder ``path`` (it is a writable folder, or can be
    created), and it is not a file the run reads nor inside a folder it reads."""
    path = Path(path)
    if (path.exists() or path.is_symlink()) and not path.is_dir():
        raise DiffperfError(f"{path} is a file; expected a folder", source=source)
    check_not_read(path, source, reads)
    if path.is_dir():
        _try_write(path, path, source)
        return
    _check_creatable(path, source)


def check_not_read(path: Path, source: str, reads: Inputs) -> None:
    """DiffperfError when ``path`` is one of the files the run reads, or inside a folder it reads."""
    target = resolved(Path(path))
    for read, what in reads:
        read_path = resolved(Path(read))
        if target == read_path or (read_path.is_dir() and target.is_relative_to(read_path)):
            problem = f"would replace {read}" if target == read_path else f"{path} is inside {read}"
            raise DiffperfError(f"{problem}, which this run reads ({what}); write elsewhere", source=source)


def resolved(path: Path) -> Path:
    """``path`` with its symlinks resolved; a symlink loop stays as given (its reader names the file)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # Python < 3.13 raises RuntimeError for a loop
        return Path(os.path.abspath(path))


def _check_creatable(path: Path, source: str) -> None:
    folder = path.parent
    while not folder.exists():
        if folder.is_symlink():  # a dangling link
            raise DiffperfError(f"cannot create {path}: {folder} is a broken symlink", source=source)
        folder = folder.parent
    if not folder.is_dir():
        raise DiffperfError(f"cannot create {path}: {folder} is not a folder", source=source)
    _try_write(folder, path, source)


def _try_write(folder: Path, path: Path, source: str) -> None:
    try:
        with tempfile.TemporaryFile(dir=folder):  # a real write: permission bits do not bind root, nor read-only mounts
            pass
    except OSError as exc:
        raise DiffperfError(f"cannot create {path}: {folder} is not writable ({exc.strerror})", source=source) from None
