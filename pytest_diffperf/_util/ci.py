"""What CI systems read from a job: GitHub Actions' step summary."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DiffperfError

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def step_summary_path() -> Path | None:
    """The job's step summary file ($GITHUB_STEP_SUMMARY), or None where the job has none."""
    path = os.environ.get(STEP_SUMMARY_ENV)
    return Path(path) if path else None


def append_step_summary(markdown: str) -> None:
    """Append ``markdown`` to the job's step summary when the job has one; DiffperfError if it cannot be written."""
    path = step_summary_path()
    if path is None:
        return
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(markdown)
    except OSError as exc:
        raise DiffperfError(f"cannot append to {path}: {exc.strerror or exc}", source=STEP_SUMMARY_ENV) from None
