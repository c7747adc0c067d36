"""The plugin's modules, loaded once into the test process before any pytester test runs.

A ``pytester`` test drops every module first imported during it (it restores ``sys.modules``), so
each in-process run would otherwise import, compile and assertion-rewrite the plugin's modules again
(seconds over the suite); and some libraries they import cannot load twice (numpy; torch, which a
second import breaks with "module functions cannot set METH_CLASS", and later a segfault), or must keep
their classes for later tests (matplotlib). The consistency check imports torch (open_clip) and
scikit-image lazily, on a run's first comparison: they are loaded here too. The reference server is
left out: it runs in its own process.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import pkgutil
from pathlib import Path

import pytest_diffperf

LEFT_OUT = ("pytest_diffperf.refserver",)
LIBRARIES = ("open_clip", "skimage.metrics")  # imported lazily by the plugin (consistency extra)


def _module_names(path: Path, prefix: str) -> list[str]:
    names = []
    for info in pkgutil.iter_modules([str(path)], prefix):
        if info.name.startswith(LEFT_OUT) or info.name.endswith(".__main__"):
            continue
        names.append(info.name)
        if info.ispkg:
            names += _module_names(path / info.name.rsplit(".", 1)[1], f"{info.name}.")
    return names


@functools.cache
def preload() -> None:
    """Import every plugin module whose libraries are installed (an absent extra is skipped); once per process."""
    for name in (*_module_names(Path(pytest_diffperf.__file__).parent, "pytest_diffperf."), *LIBRARIES):
        with contextlib.suppress(ImportError):  # a module of an extra that is not installed
            importlib.import_module(name)
