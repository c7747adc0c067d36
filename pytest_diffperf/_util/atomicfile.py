"""Atomic, locked file updates: readers see the old content or the new one, never a part.

A write goes to a temporary file in the target's folder (same filesystem), is flushed to disk and
then ``os.replace``-d over the target. ``update`` holds a ``filelock.FileLock`` beside the target
(``.<name>.lock``, left in place) while it re-reads the current content and writes the new one,
so concurrent writers (pytest-xdist workers, two sessions) merge instead of overwriting.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock

LOCK_TIMEOUT_S = 120.0
NEW_FILE_MODE = 0o644
STALE_TMP_S = 60.0  # a temporary file this old is no write in progress


def dumps_json(data: Any, indent: int = 4) -> str:
    """JSON text as the baseline files keep it: key order as given, ``indent`` spaces, final newline."""
    return json.dumps(data, indent=indent, ensure_ascii=False) + "\n"


def lock_path(path: Path) -> Path:
    path = Path(path).resolve()
    return path.with_name(f".{path.name}.lock")


@contextmanager
def locked(path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the lock that every ``update`` of ``path`` takes."""
    with FileLock(lock_path(path), timeout=timeout):
        yield


def write_atomic(path: Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` (str is written as UTF-8); keeps the file's permission bits."""
    path = Path(path).resolve()  # through a symlink: replace the file it points to, not the link
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale_temp_files(path: Path, older_than_s: float = STALE_TMP_S) -> list[Path]:
    """Remove the temporary files (``.<name>.*.tmp``) a killed writer of ``path`` left behind; the removed ones."""
    path = Path(path).resolve()
    removed = []
    now = time.time()
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(OSError):
            if not tmp.is_symlink() and now - tmp.stat().st_mtime > older_than_s:
                tmp.unlink()
                removed.append(tmp)
    return removed


def update(path: Path, change: Callable[[bytes | None], bytes | str | None]) -> bool:
    """Under the lock: ``change(current bytes or None if absent)`` -> new content, or None to leave it.

    Returns whether the file was written.
    """
    path = Path(path)
    with locked(path):
        remove_stale_temp_files(path)
        try:
            current: bytes | None = path.read_bytes()
        except FileNotFoundError:
            current = None
        new = change(current)
        if new is None:
            return False
        write_atomic(path, new)
        return True
