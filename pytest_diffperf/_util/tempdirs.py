"""The run's private temp folders (``tempfile.mkdtemp``: 0700, unpredictable names), and removing old ones."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

KEEP_S = 3 * 24 * 3600.0  # a run's logs are kept this long after their last write


def sweep(prefix: str, older_than_s: float = KEEP_S, root: Path | None = None) -> list[Path]:
    """Remove this user's folders ``<temp>/<prefix>*`` (real folders, not links) that nothing wrote to for
    ``older_than_s`` seconds; the removed ones."""
    root = root or Path(tempfile.gettempdir())
    removed = []
    now = time.time()
    for folder in root.glob(f"{prefix}*"):
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            newest = max([info.st_mtime, *(p.lstat().st_mtime for p in folder.iterdir())])
        except OSError:
            continue
        if now - newest > older_than_s:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
