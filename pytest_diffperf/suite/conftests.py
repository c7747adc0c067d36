"""SGLang's own ``conftest.py`` files, kept out of a diffperf session.

The scenarios of SGLang's baseline files are collected from its ``test/server`` folder, so pytest would
import the conftest files there and run their hooks: SGLang's performance summary and its
``diffusion-results.json`` at the end of every session, and ``ascend/conftest.py`` imports the sglang
package (absent where only the plugin and a server are installed). They serve SGLang's own tests, which
a diffperf session does not run. Each is registered, before pytest looks for it, as an empty plugin
under the name pytest gives it (its path): pytest then takes it as imported and never imports it.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from pathlib import Path

import pytest

from .options import option_path

CONFTEST = "conftest.py"
# Files every release's test/server folder holds (the harness): a folder with both is SGLang's.
HARNESS_FILES = ("testcase_configs.py", "test_server_utils.py")
KEPT_OUT = pytest.StashKey[list[Path]]()


def harness_dirs(paths: Iterable[Path]) -> list[Path]:
    """SGLang's ``test/server`` folders that hold, or are, the given paths (a baseline file or folder, the
    case lists): the path, its parent or its grandparent."""
    found: dict[Path, None] = {}
    for path in paths:
        for folder in (path, *path.parents[:2]):
            if all((folder / name).is_file() for name in HARNESS_FILES):
                found[folder] = None
    return list(found)


def sglang_conftests(paths: Iterable[Path]) -> list[Path]:
    """The conftest files of those folders and of their subfolders (``ascend/``, ``musa/``, ...)."""
    return [
        conftest
        for folder in harness_dirs(paths)
        for conftest in (folder / CONFTEST, *sorted(folder.glob(f"*/{CONFTEST}")))
        if conftest.is_file()
    ]


def keep_out(config: pytest.Config) -> None:
    """Register an empty plugin under each SGLang conftest's name (early: before the first is imported)."""
    given = [option_path(config, dest, early=True) for dest in ("diffperf_baselines", "diffperf_cases")]
    kept = sglang_conftests(p for p in given if p is not None)
    for conftest in kept:
        for name in dict.fromkeys((str(conftest.absolute()), str(conftest.resolve()))):
            if config.pluginmanager.get_plugin(name) is None:
                config.pluginmanager.register(types.ModuleType(f"diffperf: {name} kept out"), name=name)
    config.stash[KEPT_OUT] = kept


def kept_out_line(config: pytest.Config) -> str | None:
    """The header line naming the conftest files kept out."""
    kept = config.stash.get(KEPT_OUT, [])
    if not kept:
        return None
    return (
        f"diffperf: SGLang's own conftest files are not loaded (they serve its own tests): {', '.join(map(str, kept))}"
    )
