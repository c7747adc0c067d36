"""The openai SDK a release of SGLang pins, which its own harness's requests depend on (openai 3.x sends videos as
multipart): the pin read from the release, and a folder holding it, installed once into the plugin's cache.

``verify-sglang`` runs the harness with that folder first on ``PYTHONPATH`` when the installed openai is
another release (as ``tests/openai_pinned.sh`` does for the test suite).
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock
from packaging.version import Version

from .._util.cachedir import default_cache
from ..errors import DiffperfError
from .source import Source

# The openai release each SGLang release pins (its wheel's Requires-Dist), by first release: read from the
# wheels of 0.5.6-0.5.23.
OPENAI_PINS = (("0.5.23", "2.8.0"), ("0.5.6", "2.6.1"))
OPENAI_REQUIREMENT = re.compile(r"^Requires-Dist:\s*openai\s*==\s*([\w.]+)", re.M)
# What goes into the folder besides openai (its own dependencies are taken from the environment).
WITH = ("httpx>=0.27,<1", "httpcore>=1,<2", "h11", "distro")
BUILT_MARK = ".diffperf-built"
LOG_TAIL_LINES = 5


def pin_of(source: Source, release: Version) -> str:
    """The openai release ``source``'s SGLang pins: its metadata's Requires-Dist, else the table by release."""
    pin = None
    for metadata in sorted(source.root.glob("sglang-*.dist-info/METADATA")):
        found = OPENAI_REQUIREMENT.search(metadata.read_text(encoding="utf-8", errors="replace"))
        pin = found.group(1) if found else pin
    return pin or next(p for since, p in OPENAI_PINS if release >= Version(since))


def installed() -> str | None:
    try:
        return importlib.metadata.version("openai")
    except importlib.metadata.PackageNotFoundError:
        return None


def install_command(pin: str, folder: Path) -> list[str]:
    """The pip command that puts openai ``pin`` (and the HTTP client it is tested with) into ``folder``."""
    return [
        sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--target",
        str(folder), f"openai=={pin}", *WITH,
    ]  # fmt: skip


def pinned_folder(pin: str, cache: Path | None = None) -> Path:
    """A folder holding openai ``pin``, installed once into ``cache`` (default: the plugin's); DiffperfError saying
    what to install when pip fails (offline, no such release)."""
    root = (cache or default_cache()) / "openai"
    folder = root / pin
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if (folder / BUILT_MARK).is_file():
            return folder
        shutil.rmtree(folder, ignore_errors=True)  # an interrupted install's leftovers
        log = root / f"{pin}.log"
        command = install_command(pin, folder)
        with log.open("w") as out:
            code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
        if code != 0:
            tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-LOG_TAIL_LINES:])
            raise DiffperfError(
                f"SGLang's harness needs openai=={pin} (openai {installed() or 'none'} is installed) and installing "
                f"it failed (exit {code}, log {log}: {tail}); install it yourself: {shlex.join(command)}",
                source="openai",
            )
        (folder / BUILT_MARK).write_text(f"{pin}\n")
    return folder
