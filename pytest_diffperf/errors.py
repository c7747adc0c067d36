"""The two kinds of exception the plugin reports as a message alone, never with a traceback.

``DiffperfError`` is a mistake of the user's (a bad file, option or argument); ``DiffperfFailure``
is a failure of what is under test (a server that died, a bad answer, a regression).
"""

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


class DiffperfFailure(Exception):
    """What is under test failed (server, request, perf record, scenario verdict): its message says all."""
