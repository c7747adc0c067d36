"""The plugin's cache folder: ``$XDG_CACHE_HOME/pytest-diffperf`` (git= sides' venvs, SGLang's pinned openai)."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-diffperf"
