"""The run's private temp folders (``tempfile.mkdtemp``: 0700, unpredictable names), and removing old ones.

Each folder made here holds a marker file; the sweep removes only folders that hold it, so a user's own
``$TMPDIR/diffperf-history/`` (or an earlier version's folders, which have none) is never touched.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

KEEP_S = 3 * 24 * 3600.0  # a run's logs are kept this long after their last write
MARKER = ".pytest-diffperf-temp"
MARKER_TEXT = "made by pytest-diffperf; removed once nothing wrote to this folder for 3 days\n"


def make(prefix: str) -> Path:
    """A new private temp folder ``<temp>/<prefix>XXXX``, marked as the plugin's (the sweep may remove it)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    (folder / MARKER).write_text(MARKER_TEXT, encoding="utf-8")
    return folder


def is_marked(folder: Path) -> bool:
    """Whether ``folder`` holds the marker as a regular file (not a link) with the marker's text."""
    marker = folder / MARKER
    try:
        return stat.S_ISREG(marker.lstat().st_mode) and marker.read_text(encoding="utf-8") == MARKER_TEXT
    except (OSError, UnicodeDecodeError):
        return False


def sweep(prefix: str, older_than_s: float = KEEP_S, root: Path | None = None) -> list[Path]:
    """Remove this user's folders ``<temp>/<prefix>*`` made by ``make`` (real folders holding the marker, not
    links) that nothing wrote to for ``older_than_s`` seconds; the removed ones."""
    root = root or Path(tempfile.gettempdir())
    removed = []
    now = time.time()
    for folder in root.glob(f"{prefix}*"):
        try:
            info = folder.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or not is_marked(folder):
                continue
            newest = max([info.st_mtime, *(p.lstat().st_mtime for p in folder.iterdir() if p.name != MARKER)])
        except OSError:
            continue
        if now - newest > older_than_s:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
