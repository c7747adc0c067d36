"""SGLang 0.5.23's own harness and case files, loaded from the vendored copy by the package's loader.

``load_harness`` is ``pytest_diffperf.sglang.harness.load`` (the loader ``diffperf verify-sglang``
uses) on the vendored 0.5.23 tree, with a task-type table that also answers the reference
server's tiny models, so SGLang's ``ServerManager`` and ``get_generate_fn`` can drive the
reference server. ``write_input_image`` is the local file that stands in for a downloaded
reference image.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pytest_diffperf.platforms import Platform
from pytest_diffperf.sglang import caselist, harness, standins, task_types
from pytest_diffperf.sglang.harness import HARNESS_FILES, Body, decode
from pytest_diffperf.sglang.source import SERVER_DIR, locate
from tests.support.paths import SGLANG_DATA

VENDORED = SGLANG_DATA / "v0.5.23"
SRC = VENDORED / "src"
H100_BASELINES = VENDORED / "perf_baselines" / "h100.json"
SERVER = caselist.SERVER
__all__ = ["Body", "decode"]  # re-exported for the fidelity tests
MG = standins.MG
# What SGLang's registry would answer for the reference server's models (the hub knows none of them).
TINY_TASK_TYPES: dict[str, task_types.TaskType] = {
    "tiny/flux-t2i": "T2I",
    "tiny/sd-t2i": "T2I",
    "tiny/flux-kontext-edit": "TI2I",
    "tiny/wan-t2v": "T2V",
    "tiny/wan-i2v": "I2V",
}


def available() -> bool:
    """Whether the vendored SGLang sources are there (the tests that need them skip otherwise)."""
    return all((SRC / SERVER_DIR / name).is_file() for name in ("gpu_cases.py", *HARNESS_FILES))


def harness_table() -> task_types.TaskTypeTable:
    """The checked-in task-type table, and the reference server's tiny models."""
    table = task_types.load_table()
    return task_types.TaskTypeTable({**table.models, **TINY_TASK_TYPES}, table.pipelines, table.sources)


@dataclass(frozen=True)
class Harness(harness.Harness):
    """The package's ``Harness`` with the roles only the tests read."""

    @property
    def gpu_cases(self) -> ModuleType:
        return self.modules[f"{SERVER}.gpu_cases"]

    @property
    def test_utils(self) -> ModuleType:
        return self.modules[f"{MG}.test.test_utils"]

    @property
    def perf_logger(self) -> ModuleType:
        return self.modules[f"{MG}.runtime.utils.perf_logger"]


def load_harness(hardware: Platform = "h100", src: Path = SRC) -> Harness:
    """SGLang's harness modules and the case files of ``hardware``, loaded fresh (about as long as the case lists)."""
    loaded = harness.load(locate(src), hardware, table=harness_table())
    return Harness(loaded.source, loaded.modules)


def write_input_image(path: Path) -> Path:
    """A small JPEG standing in for a downloaded reference image (the same bytes reach both sides)."""
    import numpy as np
    from PIL import Image

    Image.fromarray(np.full((16, 16, 3), 127, np.uint8)).save(path, format="JPEG")
    return path
