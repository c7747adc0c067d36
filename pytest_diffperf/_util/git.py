"""The git commit a folder is checked out at."""

from __future__ import annotations

import subprocess
from pathlib import Path


def head_commit(folder: Path | None = None) -> str | None:
    """HEAD of the git checkout holding ``folder`` (default: the working directory); None outside one."""
    command = ["git", *(["-C", str(folder)] if folder is not None else []), "rev-parse", "HEAD"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip() if done.returncode == 0 else ""
    return commit or None
