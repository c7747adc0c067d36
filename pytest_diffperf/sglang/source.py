"""Where SGLang's case files are: a ``gpu_cases.py`` path, a checkout or unpacked wheel, or the installed package."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from ..errors import DiffperfError

INSTALLED = "sglang"  # the word that names the installed package
SERVER_DIR = Path("sglang", "multimodal_gen", "test", "server")
GPU_CASES = "gpu_cases.py"
# Where gpu_cases.py sits below a folder a user may name: a checkout, a wheel (or src/), the package, the test dir.
LAYOUTS = (Path("python") / SERVER_DIR, SERVER_DIR, Path(*SERVER_DIR.parts[1:]), Path())


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
        return self.server_dir / GPU_CASES


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
        if path.name != GPU_CASES:
            raise DiffperfError(f"expected SGLang's {GPU_CASES} (or a folder holding it)", source=str(path))
        return _from_gpu_cases(path.resolve(), str(given))
    if path.is_dir():
        for layout in LAYOUTS:
            candidate = path / layout / GPU_CASES
            if candidate.is_file():
                return _from_gpu_cases(candidate.resolve(), str(given))
        looked = ", ".join(str(layout / GPU_CASES) for layout in LAYOUTS)
        raise DiffperfError(f"no SGLang {GPU_CASES} in this folder (looked for {looked})", source=str(path))
    raise DiffperfError("file not found", source=str(path))


def _from_gpu_cases(path: Path, given: str) -> Source:
    package = path.parents[3]  # sglang/multimodal_gen/test/server/gpu_cases.py
    if path.parent.parts[-4:] != SERVER_DIR.parts:
        raise DiffperfError(
            f"{GPU_CASES} must sit at {SERVER_DIR / GPU_CASES} inside an sglang checkout or wheel "
            "(its imports and baseline paths are relative to that layout)",
            source=str(path),
        )
    return Source(package.parent, given=given)


def _installed(given: str) -> Source:
    try:
        spec = importlib.util.find_spec(INSTALLED)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        if (Path(location).parent / SERVER_DIR / GPU_CASES).is_file():
            return Source(Path(location).parent, installed=True, given=given)
    where = (
        f" (found at {', '.join(locations)}, without {Path(*SERVER_DIR.parts[1:]) / GPU_CASES})" if locations else ""
    )
    raise DiffperfError(
        f"the sglang package is not installed{where}: pass a path to gpu_cases.py, an sglang checkout or an "
        "unpacked wheel instead",
        source=given,
    )
