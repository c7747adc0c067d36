"""The git commit a folder is checked out at."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")  # a commit id (SHA-1 or SHA-256, possibly abbreviated)


def is_commit(text: str) -> bool:
    """Whether ``text`` is a commit id (hex digits only: safe in a file name)."""
    return COMMIT.fullmatch(text) is not None


def head_commit(folder: Path | None = None) -> str | None:
    """HEAD of the git checkout holding ``folder`` (default: the working directory); None outside one."""
    command = ["git", *(["-C", str(folder)] if folder is not None else []), "rev-parse", "HEAD"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip() if done.returncode == 0 else ""
    return commit or None
