"""Plain-text helpers shared by the terminal outputs."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence


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


TRUE_WORDS = ("1", "true", "yes", "on")


def truthy(raw: object) -> bool:
    """A switch's value: True, or a string such as 1, true, yes or on (case and spaces ignored)."""
    return raw is True or str(raw or "").strip().lower() in TRUE_WORDS


def did_you_mean(name: str, known: Iterable[str], *, list_known: int = 0) -> str:
    """A hint for an unknown ``name``: the known names it starts, else close matches; with
    ``list_known`` > 0 and no match, up to that many known names (``""`` when there is nothing to say)."""
    names = sorted(set(known))
    close = [k for k in names if k.startswith(name)][:5] or difflib.get_close_matches(name, names, n=3)
    if close:
        return f"; did you mean: {', '.join(close)}"
    if list_known and names:
        more = [f"... ({len(names)} in all)"] if len(names) > list_known else []
        return f"; known: {', '.join(names[:list_known] + more)}"
    return ""
