"""Where server logs (and the session's other files) go, and how the header names it.

By default a ``diffperf`` folder in pytest's basetemp (``pytest-of-USER/pytest-N``, of which pytest
keeps the last three runs); with ``--diffperf-log-dir DIR``, a new folder ``DIR/<UTC time>-<pid>``
per run, a known place for a CI job to upload. The folder is created when the first server starts;
a collect-only run creates none. Under xdist the controller chooses the folder and passes it to
its workers (``pytest_configure_node``), each of which writes into its own ``gwN`` subfolder.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest

from .options import Settings

WORKER_INPUT_KEY = "diffperf_log_dir"
SUBFOLDER = "diffperf"


def log_dir(config: pytest.Config, settings: Settings) -> Path:
    """This process's folder for server logs (not created here)."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None and WORKER_INPUT_KEY in workerinput:
        return Path(workerinput[WORKER_INPUT_KEY]) / str(workerinput["workerid"])
    if settings.diffperf_log_dir is not None:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        return settings.diffperf_log_dir / f"{stamp}-{os.getpid()}"
    if config.option.collectonly:
        return Path(os.devnull)  # nothing starts; a folder there cannot be made by accident
    factory: Any = getattr(config, "_tmp_path_factory", None)  # pytest's TempPathFactory (tmpdir plugin)
    if factory is None:  # -p no:tmpdir
        raise pytest.UsageError("diffperf: pytest's tmpdir plugin is off: pass --diffperf-log-dir DIR")
    return Path(factory.getbasetemp()) / SUBFOLDER


def distributed(config: pytest.Config) -> bool:
    """Whether this is the controller of an xdist run (its tests run in workers)."""
    return not hasattr(config, "workerinput") and getattr(config.option, "dist", "no") != "no"


def describe(config: pytest.Config, folder: Path) -> str:
    """The header line: where the server logs really are."""
    if config.option.collectonly:
        return "diffperf: server logs: none (collect-only run)"
    if distributed(config):
        return f"diffperf: server logs in {folder}/gw*/server-N/ (one folder per xdist worker)"
    return f"diffperf: server logs in {folder}/server-N/"


class WorkerLogDir:
    """On an xdist controller: gives each worker the run's log folder."""

    def __init__(self, folder: Path):
        self.folder = folder

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_INPUT_KEY] = str(self.folder)
