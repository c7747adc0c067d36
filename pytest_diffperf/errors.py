"""The one exception type for mistakes a user can make (bad file, bad argument)."""

from __future__ import annotations


class DiffperfError(Exception):
    """A user error: shown as one clear message, never with a traceback.

    ``source`` names the file (or option), ``key`` the JSON path or option name inside it.
    """

    def __init__(self, message: str, *, source: str | None = None, key: str | None = None):
        self.source = source
        self.key = key
        where = ": ".join(p for p in (source, key) if p)
        super().__init__(f"{where}: {message}" if where else message)
