"""Stand-ins for the sglang modules that SGLang's case files import, so they load without sglang installed.

SGLang's ``testcase_configs.py`` and ``gpu_cases.py`` (and the NPU/MUSA case files) import a few
runtime modules: the platform (which decides which lists come out), logging, environment flags,
the model registry (which needs the model hub) and, through ``perf_logger``, torch. ``standins``
builds small stand-ins for exactly those; the rest (``configs/task_type.py``, ``perf_logger.py``,
``test_utils.py`` and the case files) runs from SGLang's own source.

``installed(modules)`` puts stand-ins into ``sys.modules`` for the duration of a ``with`` block and
restores ``sys.modules`` afterwards: everything loaded under ``sglang`` inside the block is removed
again, and nothing imported before is replaced for longer than the block. The loaded modules keep
working after the block (their globals hold what they imported).

Reuse (for example a loader of SGLang's harness modules): ``standin_modules(root, hardware,
extra={...})`` returns the stand-ins, with ``extra`` added or replacing any of them (``module`` and
``absent_module`` make more); ``installed`` installs any such mapping, and
``caselist.load_with_standins`` loads further SGLang files next to the case files.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import CodeType, ModuleType, SimpleNamespace
from typing import Any

from ..errors import DiffperfError
from ..platforms import CUDA_ARCH_FLAGS, DeviceKind, Platform, device_kind
from . import task_types

MG = "sglang.multimodal_gen"
TASK_TYPE_MODULE = f"{MG}.configs.task_type"
# Where ``ModelTaskType`` is defined: its own module from 0.5.23 on, the pipeline configs' base module
# before (which imports torch and the whole runtime: only the class's own source is run from it).
TASK_TYPE_FILE = Path("multimodal_gen", "configs", "task_type.py")
PIPELINE_BASE_FILE = Path("multimodal_gen", "configs", "pipeline_configs", "base.py")
SAMPLING_PARAMS_FILE = Path("multimodal_gen", "configs", "sample", "sampling_params.py")

# Packages between ``sglang`` and the files loaded from source. Each is stood in by an empty package
# whose ``__path__`` is its real folder: submodules load from SGLang's source, while no real
# ``__init__.py`` (which would import the whole runtime) runs.
PACKAGES = (
    "sglang",
    MG,
    f"{MG}.configs",
    f"{MG}.configs.sample",
    f"{MG}.configs.pipeline_configs",
    f"{MG}.runtime",
    f"{MG}.runtime.utils",
    f"{MG}.runtime.observability",
    f"{MG}.test",
    f"{MG}.test.server",
    f"{MG}.test.server.ascend",
    f"{MG}.test.server.musa",
    "sglang.srt",
)
# Third-party modules imported at module level by perf_logger.py and test_utils.py but used only in
# functions the case files never call: stood in when they cannot be imported. torch is always stood
# in (importing it takes seconds; nothing here uses it).
OPTIONAL_THIRD_PARTY = ("cv2", "httpx", "dateutil", "dateutil.tz")
ALWAYS_STOOD_IN = ("torch", "huggingface_hub")


@dataclass(frozen=True)
class PlatformStandIn:
    """SGLang's ``current_platform`` on a given platform: ``is_cuda()``, ``is_hip()``, ``is_blackwell()``, ...

    Any other ``is_*`` query answers False.
    """

    kind: DeviceKind
    arch: frozenset[str] = frozenset()

    @classmethod
    def for_hardware(cls, hardware: Platform) -> PlatformStandIn:
        return cls(device_kind(hardware), CUDA_ARCH_FLAGS.get(hardware, frozenset()))

    def is_cuda(self) -> bool:
        return self.kind == "cuda"

    def is_hip(self) -> bool:
        return self.kind == "hip"

    is_rocm = is_hip

    def is_cuda_alike(self) -> bool:
        return self.kind in ("cuda", "hip")

    def is_npu(self) -> bool:
        return self.kind == "npu"

    def is_musa(self) -> bool:
        return self.kind == "musa"

    def is_xpu(self) -> bool:
        return self.kind == "xpu"

    def is_cpu(self) -> bool:
        return self.kind == "cpu"

    def is_blackwell(self) -> bool:
        return "blackwell" in self.arch

    def is_sm120(self) -> bool:
        return "sm120" in self.arch

    def __getattr__(self, name: str) -> Callable[..., bool]:
        if name.startswith("is_"):
            return lambda *_args, **_kwargs: False
        raise AttributeError(name)


def package_dir(root: Path) -> Path:
    """The ``sglang`` package folder under ``root`` (the folder that holds it)."""
    return root / "sglang"


def standin_modules(
    root: Path,
    hardware: Platform,
    *,
    table: task_types.TaskTypeTable | None = None,
    extra: Mapping[str, ModuleType] | None = None,
    assumed: Assumption | None = None,
) -> dict[str, ModuleType]:
    """Stand-ins for loading SGLang's case files from ``root`` (the folder holding ``sglang/``) as on ``hardware``.

    ``table`` answers the model registry (default: the checked-in table); a model it lacks is answered by
    ``assumed`` (which records it), else is the table's error. ``extra`` adds modules or replaces any of
    the stand-ins (by module name).
    """
    table = table or task_types.load_table()
    modules: dict[str, ModuleType] = {}
    pkg = package_dir(root)
    for name in PACKAGES:
        folder = pkg.joinpath(*name.split(".")[1:])
        package = module(name, __path__=[str(folder)], __file__=str(folder / "__init__.py"))
        package.__package__ = name
        modules[name] = package

    platform = PlatformStandIn.for_hardware(hardware)
    modules[f"{MG}.runtime.platforms"] = module(f"{MG}.runtime.platforms", current_platform=platform)
    modules[f"{MG}.envs"] = _env_module(f"{MG}.envs", SGLANG_DIFFUSION_STAGE_LOGGING=True)
    modules[f"{MG}.runtime.utils.logging_utils"] = module(
        f"{MG}.runtime.utils.logging_utils",
        init_logger=logging.getLogger,
        globally_suppress_loggers=lambda *_a, **_k: None,
        get_is_main_process=lambda: True,
        _SGLDiffusionLogger=logging.Logger,
        CYAN="",
        RESET="",
    )
    modules[f"{MG}.runtime.utils.common"] = module(f"{MG}.runtime.utils.common", get_bool_env_var=_bool_env)
    modules[f"{MG}.runtime.observability.metrics"] = module(
        f"{MG}.runtime.observability.metrics", get_metrics=lambda *_a, **_k: None
    )
    task_type = _ModelTaskType(pkg)
    modules[f"{MG}.configs.pipeline_configs.base"] = _lazy_module(
        f"{MG}.configs.pipeline_configs.base", {"ModelTaskType": task_type}
    )
    sampling = pkg / SAMPLING_PARAMS_FILE  # DataType: the release's own enum, run on its own (test_utils imports it)
    modules[f"{MG}.configs.sample.sampling_params"] = _lazy_module(
        f"{MG}.configs.sample.sampling_params",
        {"normalize_quality": lambda: _normalize_quality, "DataType": lambda: _class_from_source(sampling, "DataType")},
    )
    modules[f"{MG}.registry"] = module(
        f"{MG}.registry",
        get_model_info=lambda model_path: _model_info(task_type(), _answer(table, assumed, model_path)),
        get_pipeline_config_classes=lambda name: _pipeline_classes(task_type(), table.pipeline_task_type(name)),
    )
    modules["sglang.srt.environ"] = module("sglang.srt.environ", envs=_SrtEnvs())

    for name in ALWAYS_STOOD_IN:
        modules[name] = absent_module(name)
    modules["huggingface_hub"].snapshot_download = _snapshot_download  # type: ignore[attr-defined]
    for name in OPTIONAL_THIRD_PARTY:
        if not _importable(name):
            modules[name] = absent_module(name)
    if "dateutil.tz" in modules:
        from datetime import timezone

        modules["dateutil.tz"].UTC = timezone.utc  # type: ignore[attr-defined]
        modules.setdefault("dateutil", module("dateutil")).tz = modules["dateutil.tz"]  # type: ignore[attr-defined]

    modules.update(extra or {})
    return modules


class _SourceLoader(importlib.machinery.SourceFileLoader):
    """SGLang's files, each compiled once per process for each content: a tree's lists run from source once for
    each platform (``diffperf lint --cases`` runs all eight)."""

    def source_to_code(  # type: ignore[override]  # typeshed's signature lacks the keyword importlib passes
        self, data: bytes, path: str, *, _optimize: int = -1
    ) -> CodeType:
        return _compiled(bytes(data), path)


@functools.lru_cache(maxsize=64)
def _compiled(source: bytes, path: str) -> CodeType:
    return compile(source, path, "exec", dont_inherit=True)


class _PlainSource:
    """Finds SGLang's modules on their package's ``__path__`` as plain source, ahead of the import hooks of the
    process that runs them: inside pytest, its assertion rewriting would parse and rewrite SGLang's ``test_*.py``
    files (``test/test_utils.py``, 88 kB) on every load, which the ``diffperf`` commands never do."""

    @staticmethod
    def find_spec(name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        if path is None or not _is_sglang(name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _SourceLoader(name, spec.loader.path)
        return spec


_PLAIN_SOURCE = _PlainSource()


@contextlib.contextmanager
def installed(modules: Mapping[str, ModuleType]) -> Iterator[None]:
    """``modules`` in ``sys.modules`` inside the block, SGLang's other modules loaded as plain source (see
    ``_PlainSource``); ``sys.modules`` as it was (for these and ``sglang*``) after."""
    saved = {name: sys.modules.get(name) for name in modules}
    before_sglang = {name: mod for name, mod in sys.modules.items() if _is_sglang(name)}
    outermost = _PLAIN_SOURCE not in sys.meta_path
    try:
        sys.modules.update(modules)
        if outermost:
            sys.meta_path.insert(0, _PLAIN_SOURCE)
        importlib.invalidate_caches()
        yield
    finally:
        if outermost:
            sys.meta_path.remove(_PLAIN_SOURCE)
        for name in [n for n in sys.modules if _is_sglang(n)]:
            del sys.modules[name]
        sys.modules.update(before_sglang)
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load_source_module(name: str, path: Path) -> ModuleType:
    """Execute SGLang's file ``path`` as module ``name`` (inside ``installed``)."""
    spec = importlib.util.spec_from_file_location(name, path, loader=_SourceLoader(name, str(path)))
    if spec is None or spec.loader is None:
        raise DiffperfError("cannot load as a Python module", source=str(path))
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[name] = loaded
    spec.loader.exec_module(loaded)
    return loaded


def _is_sglang(name: str) -> bool:
    return name == "sglang" or name.startswith("sglang.")


def module(name: str, **attrs: Any) -> ModuleType:
    """A stand-in module ``name`` holding ``attrs``."""
    made = ModuleType(name, f"pytest-diffperf stand-in for {name}")
    made.__dict__.update(attrs)
    return made


def absent_module(name: str) -> ModuleType:
    """A module that is not there: any attribute exists (annotations and defaults need it) but fails when used.

    It is also a package (an empty ``__path__``), so stand-ins for its submodules can be installed.
    """
    made = module(name)

    def __getattr__(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)

        def absent(*_args: Any, **_kwargs: Any) -> Any:
            raise ImportError(f"{name}.{attr}: {name} is stood in by pytest-diffperf while SGLang's case files load")

        return type(attr, (), {"__new__": absent, "__call__": absent})

    made.__path__ = []
    made.__getattr__ = __getattr__  # type: ignore[method-assign]
    return made


def _lazy_module(name: str, getters: Mapping[str, Callable[[], Any]]) -> ModuleType:
    """A module whose attributes are computed when first read (after the real modules they come from load)."""
    made = module(name)

    def __getattr__(attr: str) -> Any:
        if attr in getters:
            return getters[attr]()
        raise AttributeError(f"module {name!r} (a pytest-diffperf stand-in) has no attribute {attr!r}")

    made.__getattr__ = __getattr__  # type: ignore[method-assign]
    return made


def _env_module(name: str, **fixed: Any) -> ModuleType:
    """``sglang.multimodal_gen.envs``: the flags given, else the environment variable of that name."""
    made = module(name, **fixed)

    def __getattr__(attr: str) -> Any:
        if attr.startswith("SGLANG_"):
            return os.environ.get(attr)
        raise AttributeError(attr)

    made.__getattr__ = __getattr__  # type: ignore[method-assign]
    return made


class _ModelTaskType:
    """SGLang's own ``ModelTaskType``, loaded at first use (inside ``installed``) and kept: cases made after the
    block (the registry asked then) get the same enum as those made inside.

    From ``configs/task_type.py`` where the release has it, else the class alone out of
    ``configs/pipeline_configs/base.py`` (its methods that return ``DataType`` are never called here).
    """

    def __init__(self, package: Path) -> None:
        self._package = package
        self._enum: Any = None

    def __call__(self) -> Any:
        if self._enum is None:
            if (self._package / TASK_TYPE_FILE).is_file():
                self._enum = importlib.import_module(TASK_TYPE_MODULE).ModelTaskType
            else:
                self._enum = _class_from_source(self._package / PIPELINE_BASE_FILE, "ModelTaskType")
        return self._enum


def _class_from_source(path: Path, name: str) -> Any:
    """Class ``name`` of SGLang's file ``path``, run on its own (with ``enum``'s names); DiffperfError if absent."""
    import ast
    import enum

    if not path.is_file():
        raise DiffperfError(
            f"this SGLang release keeps {name} in neither sglang/{TASK_TYPE_FILE} nor sglang/{PIPELINE_BASE_FILE}; "
            "copy that file from the same release (its wheel on PyPI: pip download --no-deps sglang==VERSION)",
            source=str(path),
        )
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: list[ast.stmt] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name]
    if not found:
        raise DiffperfError(f"no class {name} here, where this SGLang release should define it", source=str(path))
    namespace: dict[str, Any] = {
        "Enum": enum.Enum,
        "auto": enum.auto,
        "__name__": f"{MG}.configs.pipeline_configs.base",
    }
    namespace["DataType"] = absent_module("DataType")
    exec(compile(ast.Module(body=found, type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102 (SGLang's own class)
    return namespace[name]


@dataclass
class Assumption:
    """The task type the stand-in registry answers for a model the table lacks, and the models it answered so."""

    task: task_types.TaskType
    models: list[str] = field(default_factory=list)


def _answer(table: task_types.TaskTypeTable, assumed: Assumption | None, model_path: str) -> str:
    found = table.lookup(model_path)
    if found is not None:
        return found
    if assumed is None:
        return table.task_type(model_path)  # the error naming the model
    if model_path not in assumed.models:
        assumed.models.append(model_path)
    return assumed.task


def _model_info(model_task_type: Any, task: str) -> SimpleNamespace:
    return SimpleNamespace(pipeline_config_cls=SimpleNamespace(task_type=model_task_type[task]))


def _pipeline_classes(model_task_type: Any, task: str | None) -> tuple[SimpleNamespace, None] | None:
    return None if task is None else (SimpleNamespace(task_type=model_task_type[task]), None)


# configs/sample/sampling_params.py (QUALITY_LEVELS, QUALITY_ALIASES, normalize_quality)
QUALITY_LEVELS = ("exact", "lossless", "high")
QUALITY_ALIASES = {"extra-high": "lossless"}


def _normalize_quality(quality: str) -> str:
    level = QUALITY_ALIASES.get(quality, quality)
    if level not in QUALITY_LEVELS:
        raise ValueError(f"quality must be one of {[*QUALITY_LEVELS, *QUALITY_ALIASES]}, got {quality!r}")
    return level


def _bool_env(name: str, default: str = "false") -> bool:
    return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")


class _SrtEnvs:
    """``sglang.srt.environ.envs``: ``envs.NAME.get()`` reads the environment (None when unset or empty)."""

    def __getattr__(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(get=lambda: os.environ.get(name) or None)


def _snapshot_download(repo_id: str, *_args: Any, **_kwargs: Any) -> str:
    """MUSA's case file resolves models to local cache snapshots; the model id serves ``sglang serve`` as well."""
    return repo_id


def _importable(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False
