"""The ``launchers`` fixture for `diffperf compare` tests."""

from __future__ import annotations

import pytest

from pytest_diffperf.launchers import Launcher, register_launcher
from pytest_diffperf.serving.launchers import LAUNCHERS


@pytest.fixture
def launchers():
    """Register launchers for one test: ``launchers(instance, ...)``; they are removed afterwards."""
    added: list[str] = []

    def add(*items: Launcher) -> None:
        for launcher in items:
            register_launcher(launcher)
            added.append(launcher.name)

    yield add
    for name in added:
        LAUNCHERS.pop(name, None)
