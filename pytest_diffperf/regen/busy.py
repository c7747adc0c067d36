"""Baselines are never recorded from a busy machine: the refusal's advice, and what ``--accept-busy`` leaves in
the file's metadata (``diffperf accept`` and ``--regen-baselines`` alike)."""

from __future__ import annotations

from collections.abc import Sequence

BUSY_KEY = "measured_busy"  # the metadata key naming the scenarios accepted though measured busy
QUIET = (
    "record it when the machine is quiet (pytest --regen-baselines -k ID, or diffperf accept on a quiet run's "
    "results), or --accept-busy to take it anyway"
)


def busy_note(busy: Sequence[str]) -> str:
    """The metadata's line: which scenarios were accepted though measured busy, with their figures."""
    return f"accepted with --accept-busy though measured busy: {'; '.join(busy)}"
