""".ci/minimum.txt pins exactly pyproject.toml's declared floors (the minimum-versions job installs it)."""

from __future__ import annotations

import re

import pytest
from packaging.version import Version

from tests.support.paths import REPO

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11


def floors(requirements: list[str]) -> dict[str, Version]:
    found = {}
    for requirement in requirements:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)(?:,<[0-9.]+)?", requirement.strip())  # a ceiling too
        if match:
            found[match[1].lower()] = Version(match[2])
    return found


def test_the_pins_are_the_declared_floors():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = floors(project["dependencies"]) | floors(
        [r for r in project["optional-dependencies"]["test"] if r.startswith("hypothesis")]
    )
    lines = [line.split("#")[0].strip() for line in (REPO / ".ci/minimum.txt").read_text().splitlines()]
    pinned = {name.lower(): Version(version) for name, version in (line.split("==") for line in lines if line)}
    assert pinned == declared
