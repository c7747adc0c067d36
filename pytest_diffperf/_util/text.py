"""Plain-text helpers shared by the terminal outputs."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(rows: Sequence[Sequence[str]], right_from: int | None = 1) -> list[str]:
    """Rows as aligned lines: columns before ``right_from`` left-aligned, the rest right-aligned (None: all left)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    right = len(widths) if right_from is None else right_from
    return [
        "  ".join(
            cell.rjust(w) if i >= right else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
