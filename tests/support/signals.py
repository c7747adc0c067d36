"""Subprocesses that receive the signals a test sends, even where the test runner ignores them.

A process started in the background by a non-interactive shell ignores SIGINT and SIGQUIT, one
under ``nohup`` SIGHUP too, and an ignored signal stays ignored across ``exec``: a test that
interrupts a pytest it started would then wait for nothing. ``python_with_default_signals`` puts
them back to their defaults in the child alone, before it runs ``args``.
"""

from __future__ import annotations

import sys

RESET = (
    "import os, signal, sys\n"
    "for s in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT):\n"
    "    signal.signal(s, signal.SIG_DFL)\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


def python_with_default_signals(*args: str) -> list[str]:
    """``python ARGS`` with SIGHUP, SIGINT and SIGQUIT at their defaults (Python then turns SIGINT into
    KeyboardInterrupt, as in a terminal)."""
    return [sys.executable, "-c", RESET, *args]
