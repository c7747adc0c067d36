"""Where SGLang's case files are: a ``gpu_cases.py`` (or, before it existed, ``testcase_configs.py``) path, a
checkout or unpacked wheel, or the installed package."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..errors import DiffperfError

INSTALLED = "sglang"  # the word that names the installed package
SERVER_DIR = Path("sglang", "multimodal_gen", "test", "server")
GPU_CASES = "gpu_cases.py"
TESTCASE_CONFIGS = "testcase_configs.py"
# The file that holds a release's GPU lists: gpu_cases.py from 0.5.12 on, testcase_configs.py itself before.
CASE_FILES = (GPU_CASES, TESTCASE_CONFIGS)
# Where the case files sit below a folder a user may name: a checkout, a wheel (or src/), the package, the test dir.
LAYOUTS = (Path("python") / SERVER_DIR, SERVER_DIR, Path(*SERVER_DIR.parts[1:]), Path())
# SGLang's files outside test/server that its case files import (by path below the ``sglang`` folder); one of
# each tuple suffices (ModelTaskType: configs/task_type.py from 0.5.22 on, the pipeline configs' base before).
OUTSIDE_SERVER_DIR = (
    (Path("multimodal_gen", "test", "test_utils.py"),),
    (Path("multimodal_gen", "runtime", "utils", "perf_logger.py"),),
    (
        Path("multimodal_gen", "configs", "task_type.py"),
        Path("multimodal_gen", "configs", "pipeline_configs", "base.py"),
    ),
)


@dataclass(frozen=True)
class Source:
    """SGLang's test files: ``root`` holds the ``sglang`` package folder; ``installed`` when it is the import's."""

    root: Path
    installed: bool = False
    given: str = ""

    @property
    def server_dir(self) -> Path:
        return self.root / SERVER_DIR

    @property
    def gpu_cases(self) -> Path:
        """The file holding the GPU lists: ``gpu_cases.py``, or ``testcase_configs.py`` in releases before it."""
        gpu_cases = self.server_dir / GPU_CASES
        return gpu_cases if gpu_cases.is_file() or self.installed else self.server_dir / TESTCASE_CONFIGS

    @property
    def has_gpu_cases(self) -> bool:
        return (self.server_dir / GPU_CASES).is_file()


def names_installed(path: Path | str) -> bool:
    """Whether ``path`` is the word ``sglang`` (the installed package, even where a folder of that name exists)
    or a path named ``sglang`` that does not exist."""
    path = Path(path)
    return str(path) == INSTALLED or (path.name == INSTALLED and not path.exists())


def is_sglang_source(path: Path | str) -> bool:
    """Whether ``path`` names SGLang's case lists (not a JSON case file): a ``.py`` file, a folder, or ``sglang``."""
    path = Path(path)
    return path.suffix == ".py" or path.is_dir() or names_installed(path)


def locate(given: Path | str) -> Source:
    """The SGLang source ``given`` names; DiffperfError naming where it looked."""
    path = Path(given)
    if names_installed(path):
        return _installed(str(given))
    if path.is_file():
        if path.name not in CASE_FILES:
            raise DiffperfError(
                f"expected SGLang's {GPU_CASES} or {TESTCASE_CONFIGS} (or a folder holding them)", source=str(path)
            )
        return _from_case_file(path.resolve(), str(given))
    if path.is_dir():
        for layout in LAYOUTS:
            for name in CASE_FILES:
                candidate = path / layout / name
                if candidate.is_file():
                    return _from_case_file(candidate.resolve(), str(given))
        looked = ", ".join(str(layout / TESTCASE_CONFIGS) for layout in LAYOUTS)
        raise DiffperfError(
            f"no SGLang {GPU_CASES} or {TESTCASE_CONFIGS} in this folder (looked for {looked})", source=str(path)
        )
    raise DiffperfError("file not found", source=str(path))


def _from_case_file(path: Path, given: str) -> Source:
    if path.parent.parts[-4:] != SERVER_DIR.parts:
        raise DiffperfError(_copied_out(path.parent), source=str(path))
    source = Source(path.parents[4], given=given)  # <root>/sglang/multimodal_gen/test/server/<file>
    missing = missing_outside(source.root / "sglang")
    if missing:
        raise DiffperfError(_copied_out(path.parent, missing), source=str(path))
    return source


def missing_outside(package: Path) -> list[Path]:
    """SGLang's files outside ``test/server`` that the case files import but ``package`` (``sglang/``) lacks."""
    return [options[0] for options in OUTSIDE_SERVER_DIR if not any((package / rel).is_file() for rel in options)]


def _copied_out(server_dir: Path, missing: list[Path] | None = None) -> str:
    """What a folder of SGLang's case files lacks, and where to get it."""
    needed = missing if missing is not None else [options[0] for options in OUTSIDE_SERVER_DIR]
    names = ", ".join(f"sglang/{rel}" for rel in needed)
    where = "is not inside an sglang checkout or wheel" if missing is None else "lacks files of its release"
    return (
        f"{server_dir} {where}: SGLang's case files import {names}, which sit outside {SERVER_DIR.relative_to('sglang')}. "
        f"Keep the folder at {SERVER_DIR} inside the release's tree (a checkout, or its wheel unpacked: "
        "pip download --no-deps sglang==VERSION && unzip sglang-VERSION-*.whl), or pass that tree instead"
    )


def _installed(given: str) -> Source:
    try:
        spec = importlib.util.find_spec(INSTALLED)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        if any((Path(location).parent / SERVER_DIR / name).is_file() for name in CASE_FILES):
            return Source(Path(location).parent, installed=True, given=given)
    where = (
        f" (found at {', '.join(locations)}, without {Path(*SERVER_DIR.parts[1:]) / TESTCASE_CONFIGS})"
        if locations
        else ""
    )
    raise DiffperfError(
        f"the sglang package is not installed{where}: pass a path to gpu_cases.py, an sglang checkout or an "
        "unpacked wheel instead",
        source=given,
    )
