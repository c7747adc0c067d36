"""SGLang 0.5.23's ``test/server`` folder as its wheel lays it out, built from the vendored files: the harness
and case lists, every platform's baseline file, the NPU and MUSA fragments, the thresholds, its conftest files."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_diffperf.sglang.source import SERVER_DIR
from tests.support.paths import REPO, SGLANG_DATA

RELEASE = SGLANG_DATA / "v0.5.23"
WHEEL_REST = REPO / "tests" / "vendor" / "sglang-wheel-0.5.23"  # the wheel's files ../sglang-data leaves out
# The wheel's files at test/server: from the data folder's top level (the rest are at their package paths).
AT_SERVER = ("perf_baselines", "consistency_thresholds", "ascend")
PLATFORMS = ("h100", "b200", "5090", "xpu_b60", "rocm", "npu", "musa")


def build(root: Path) -> Path:
    """Lay the tree out under ``root`` (``root/sglang/multimodal_gen/...``); the ``test/server`` folder."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(RELEASE / "src", root, ignore=ignore, dirs_exist_ok=True)
    server = root / SERVER_DIR
    for name in AT_SERVER:
        shutil.copytree(RELEASE / name, server / name, ignore=ignore, dirs_exist_ok=True)
    shutil.copytree(WHEEL_REST / "sglang", root / "sglang", ignore=ignore, dirs_exist_ok=True)
    return server
