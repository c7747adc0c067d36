"""Names that become parts of file names (case ids, scenario keys): checked, and joined to a folder safely."""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import DiffperfError

SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
NAME_RULE = "letters, digits, '_', '.', '+' and '-' (not first), without '..'"
MAX_NAME = 200  # characters: file names made of it (``<id>_<n>gpu_frame_<k>.png``) stay under 255 bytes


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a case id or scenario key (it is used in file names), or None."""
    if not isinstance(name, str):
        return f"expected a string, got {type(name).__name__}"
    if not name:
        return "is empty"
    if any(c.isspace() for c in name):
        return f"{name!r} holds whitespace; use {NAME_RULE}"
    if "/" in name or "\\" in name:
        return f"{name!r} holds a path separator; use {NAME_RULE}"
    if ".." in name:
        return f"{name!r} holds '..'; use {NAME_RULE}"
    if len(name) > MAX_NAME:
        return f"{name[:20]!r}... is {len(name)} characters long; at most {MAX_NAME}"
    if not SAFE_NAME.fullmatch(name):
        return f"{name!r} is not a plain name; use {NAME_RULE}"
    return None


def inside(folder: Path, name: str, *, source: str | None = None, key: str | None = None) -> Path:
    """``folder / name``, refused (DiffperfError) unless it stays inside ``folder`` once symlinks are resolved."""
    path = folder / name
    if not path.resolve().is_relative_to(folder.resolve()):
        raise DiffperfError(f"{name!r} would leave {folder}", source=source or str(folder), key=key)
    return path
