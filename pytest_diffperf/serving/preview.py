"""A dry run's text, for ``pytest --diffperf-dry-run`` and ``diffperf compare --dry-run`` alike.

One block per run: a title, the server it would start (the pool's own command and environment,
``ServerPool.plan``) or the earlier one it shares, the request (``Launcher.preview``), then notes.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from .pool import ServerPlan


def block(title: str, server: ServerPlan | str, request: str, notes: Sequence[str] = ()) -> list[str]:
    """The lines of one run; ``server`` is a plan, or which earlier run's server it shares (``"above"``)."""
    lines = [title]
    if isinstance(server, str):
        lines.append(f"  server:  the one {server} (same settings)")
    else:
        lines.append(f"  server:  {shlex.join(server.command)}")
        lines.append(f"  env:     {format_env(server.env)}")
    lines.append(f"  request: {request}")
    lines += [f"  {note}" for note in notes]
    return lines


def format_env(env: Mapping[str, str]) -> str:
    """``K=V`` pairs, shell-quoted, in the order the launcher adds them."""
    return " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
