"""What the plugin keeps on pytest's stash: the session, and on each item the scenario it runs.

A module of its own, without the session's imports, so ``plugin.py`` can ask whether the plugin is
active without loading it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .session import DiffperfSession

SESSION_KEY: pytest.StashKey[DiffperfSession] = pytest.StashKey()  # set while the plugin is active
SCENARIO_KEY: pytest.StashKey[str] = pytest.StashKey()  # on an item: the scenario it runs


def get_session(config: pytest.Config) -> DiffperfSession | None:
    """The session of this pytest process; None when the plugin is not active."""
    return config.stash.get(SESSION_KEY, None)
