"""What CI systems read from a job: GitHub Actions' step summary."""

from __future__ import annotations

import os

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


def append_step_summary(markdown: str) -> None:
    """Append ``markdown`` to the job's step summary when the job has one ($GITHUB_STEP_SUMMARY)."""
    path = os.environ.get(STEP_SUMMARY_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(markdown)
