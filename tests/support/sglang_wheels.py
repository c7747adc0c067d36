"""SGLang's releases 0.5.6 to 0.5.23 as unpacked wheels, for the checks that hold on every release.

``$DIFFPERF_SGLANG_WHEELS`` names a folder of them (one ``X.Y.Z/`` folder per release); without it each
release is fetched once from the package index into the plugin's cache (``pip download --no-deps``, as
``sglang.openaipin`` installs openai: ``$XDG_CACHE_HOME/pytest-diffperf/sglang-wheels/X.Y.Z``, the
``sglang/multimodal_gen`` tree, ``version.py`` and the metadata kept). Where the index cannot be reached
the test is skipped, naming the release and pip's last line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
from filelock import FileLock

from pytest_diffperf._util.cachedir import default_cache
from pytest_diffperf.sglang import release

RELEASES = tuple(f"0.5.{minor}" for minor in range(6, 24))
KEPT = ("sglang/multimodal_gen/", "sglang/version.py")
BUILT_MARK = ".diffperf-unpacked"


def release_trees() -> list[Path]:
    """Every release's unpacked tree, oldest first (the folder's own, else fetched into the cache)."""
    given = os.environ.get("DIFFPERF_SGLANG_WHEELS")
    if given:
        trees = [p for p in Path(given).iterdir() if p.is_dir() and (p / "sglang").is_dir()]
        return sorted(trees, key=lambda p: release.parse(p.name))
    root = default_cache() / "sglang-wheels"
    root.mkdir(parents=True, exist_ok=True)
    return [_fetched(version, root / version) for version in RELEASES]


def _fetched(version: str, folder: Path) -> Path:
    with FileLock(str(folder) + ".lock"):
        if (folder / BUILT_MARK).is_file():
            return folder
        with tempfile.TemporaryDirectory(prefix="diffperf-sglang-wheel-") as tmp:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
            command += ["--python-version", "3.11", "-q", "-d", tmp, f"sglang=={version}"]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            wheels = list(Path(tmp).glob("sglang-*.whl"))
            if done.returncode != 0 or not wheels:
                last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
                pytest.skip(f"SGLang {version}'s wheel could not be fetched from the package index: {last}")
            with zipfile.ZipFile(wheels[0]) as wheel:
                names = [n for n in wheel.namelist() if n.startswith(KEPT) or ".dist-info/" in n]
                wheel.extractall(folder, names)
        (folder / BUILT_MARK).write_text(f"{version}\n")
    return folder
