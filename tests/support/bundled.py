"""The bundled suite run as a user runs it: ``pytest`` at the repository root, and the scenarios it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.support.paths import REPO


def pytest_at_root(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``pytest ARGS`` at the repository root, as a user types it (``env``: variables added)."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=1500, env=environ)


def scenarios(path: Path) -> dict[str, dict]:
    """A results file's scenarios by id."""
    return {s["scenario"]: s for s in json.loads(path.read_text())["scenarios"]}


def cases_file(path: Path, edit: Callable[[dict], None]) -> Path:
    """``data/cases.json`` with ``edit`` applied to each case, written to ``path`` (for ``--diffperf-cases``)."""
    doc = json.loads((REPO / "data/cases.json").read_text())
    for case in doc["cases"]:
        edit(case)
    path.write_text(json.dumps(doc))
    return path
