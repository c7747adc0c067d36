"""Which case lists make which CI suite, read from SGLang's own files without running them.

From 0.5.17 on, ``gpu_cases.py`` (and the NPU file) hold ``PARAMETRIZED_CASE_GROUPS`` (suite -> test
files and their lists), read from the loaded module. Before, ``test/run_suite.py`` maps each suite
to test files (``SUITES``, ``FILE_SUITES``, ``suites_ascend``, ``PARAMETRIZED_CASE_GROUPS``), and
each test file parametrizes its class over one list (``@pytest.fixture(params=ONE_GPU_CASES_A)`` or
``diffusion_case_fixture(ONE_GPU_B200_CASES)``). Both are read here from the source, as data: the
runner imports the whole harness, and the test files import pytest.

Which platform's CI runs a suite is read from its name, as SGLang names them: ``N-gpu`` (the CUDA and
ROCm machines), ``N-gpu-PLATFORM`` (``1-gpu-b200``, ``4-gpu-h100``, ``1-gpu-xpu``, ``1-gpu-musa``),
``N-npu``; a ``-nightly`` suite is not run by default; any other name is not mapped (``platforms_of``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import DiffperfError
from ..platforms import Platform, canonical_platform

RUN_SUITE = "run_suite.py"
# Test files of a platform folder that no runner lists (0.5.12's ascend/): test_server_1_npu.py -> suite 1-npu,
# the name later releases give the same file's suite.
FILE_SUITE_NAME = re.compile(r"^test_server_(\d+)_(npu|musa)\.py$")
FIXTURE_FUNCTIONS = frozenset({"diffusion_case_fixture"})
SUITE_NAME = re.compile(r"^\d+-(?P<device>gpu|npu)(?:-(?P<platform>.+?))?(?P<nightly>-nightly)?$")
GENERIC_GPU = ("h100", "rocm", "cpu")  # where a plain N-gpu suite runs (the CPU reference server stands for h100)
AS_PLATFORM = {"cpu": "h100"}  # the platform whose suites another one runs


@dataclass(frozen=True)
class SuitePlatforms:
    """The platforms whose CI runs a suite (empty: its name maps to none), and whether only nightly."""

    platforms: tuple[str, ...]
    nightly: bool = False


def platforms_of(name: str) -> SuitePlatforms:
    """Where SGLang's CI runs suite ``name``, from its name (``1-gpu``, ``4-gpu-h100``, ``1-gpu-musa-nightly``)."""
    match = SUITE_NAME.match(name)
    if match is None:
        return SuitePlatforms(())
    nightly = bool(match["nightly"])
    if match["device"] == "npu":
        return SuitePlatforms(("npu",) if match["platform"] is None else (), nightly)
    if match["platform"] is None:
        return SuitePlatforms(GENERIC_GPU, nightly)
    try:
        platform = canonical_platform(match["platform"])
    except DiffperfError:
        return SuitePlatforms(())
    return SuitePlatforms((platform, *(p for p, same in AS_PLATFORM.items() if same == platform)), nightly)


def default_suites(hardware: Platform, names: list[str]) -> list[str]:
    """Of ``names`` (a release's suites), those SGLang's CI runs on ``hardware`` by default."""
    found = [(n, platforms_of(n)) for n in names]
    return [n for n, where in found if hardware in where.platforms and not where.nightly]


def list_names_by_suite(test_dir: Path) -> dict[str, list[str]]:
    """Suite -> the case-list names its test files use, from ``test_dir/run_suite.py`` (empty if it has none)."""
    runner = test_dir / RUN_SUITE
    tree = _parse(runner)
    if tree is None:
        return {}
    out: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Dict)):
            continue
        for key, value in zip(node.value.keys, node.value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                continue
            if not isinstance(value, ast.List | ast.Tuple):
                continue
            names = _lists_of_entries(test_dir / "server", value.elts)
            if names:
                out.setdefault(key.value, [])
                out[key.value] += [n for n in names if n not in out[key.value]]
    return out


def list_names_by_test_file(folder: Path) -> dict[str, list[str]]:
    """Suite -> case-list names from the test files of ``folder`` named ``test_server_<N>_<platform>.py``."""
    out: dict[str, list[str]] = {}
    for path in sorted(folder.glob("test_server_*.py")):
        match = FILE_SUITE_NAME.match(path.name)
        names = test_file_lists(path) if match else []
        if match and names:
            out[f"{match.group(1)}-{match.group(2)}"] = names
    return out


def _lists_of_entries(server_dir: Path, entries: list[ast.expr]) -> list[str]:
    names: list[str] = []
    for entry in entries:
        if isinstance(entry, ast.Tuple) and len(entry.elts) == 2 and isinstance(entry.elts[1], ast.Name):
            names.append(entry.elts[1].id)  # ("test_server_1_gpu.py", ONE_GPU_CASES)
        elif isinstance(entry, ast.Constant) and isinstance(entry.value, str) and entry.value.endswith(".py"):
            names += test_file_lists(server_dir / entry.value)
    return names


def test_file_lists(path: Path) -> list[str]:
    """The case-list names a test file parametrizes over (``params=NAME``, ``diffusion_case_fixture(NAME)``)."""
    tree = _parse(path)
    if tree is None:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        found = [kw.value for kw in node.keywords if kw.arg == "params"]
        func = node.func
        if isinstance(func, ast.Name) and func.id in FIXTURE_FUNCTIONS and node.args:
            found.append(node.args[0])
        names += [f.id for f in found if isinstance(f, ast.Name) and f.id not in names]
    return names


def _parse(path: Path) -> ast.Module | None:
    if not path.is_file():
        return None
    try:
        return ast.parse(path.read_text(encoding="utf-8"), str(path))
    except (SyntaxError, UnicodeDecodeError):
        return None
