"""SGLang's case lists, run for real: the dataclasses after ``__post_init__``, by suite, for one platform.

The case files are executed (with ``standins`` unless the installed sglang imports for real), so
everything ``DiffusionTestCase.__post_init__`` computes (the quality pins, default sampling
parameters, modality) and every platform branch of ``gpu_cases.py`` is as SGLang's CI sees it.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import DiffperfError
from ..platforms import DEFAULT_GPU, canonical_platform, device_kind
from . import standins, task_types
from .source import Source

MG = standins.MG
SERVER = f"{MG}.test.server"
CASE_MODULES = {
    "gpu": (f"{SERVER}.gpu_cases", Path("gpu_cases.py")),
    "npu": (f"{SERVER}.ascend.testcase_configs_npu", Path("ascend", "testcase_configs_npu.py")),
    "musa": (f"{SERVER}.musa.testcase_configs_musa", Path("musa", "testcase_configs_musa.py")),
}
# Suites whose cases live in a test file rather than in PARAMETRIZED_CASE_GROUPS: suite -> list name.
FILE_SUITE_LISTS = {"1-gpu-b200": "ONE_GPU_B200_CASES", "4-gpu-h100": "MINIMAX_H3_FOUR_GPU_H100_CASES"}
# MUSA's suites (musa/run_suite.py and its test files): suite -> list name.
MUSA_SUITE_LISTS = {
    "1-gpu-musa": "ONE_GPU_MUSA_CASES",
    "1-gpu-musa-nightly": "ONE_GPU_NIGHTLY_MUSA_CASES",
    "2-gpu-musa": "TWO_GPU_MUSA_CASES",
}
# What SGLang's CI runs on each platform.
DEFAULT_SUITES = {
    "h100": ("1-gpu", "2-gpu", "4-gpu-h100"),
    "b200": ("1-gpu-b200",),
    "5090": ("1-gpu-5090",),
    "xpu_b60": ("1-gpu-xpu",),
    "rocm": ("1-gpu", "2-gpu"),
    "npu": ("1-npu", "2-npu"),
    "musa": ("1-gpu-musa", "2-gpu-musa"),
    "cpu": ("1-gpu", "2-gpu", "4-gpu-h100"),
}
# The baseline files testcase_configs.py reads at import (relative to it), and stand-ins for missing ones:
# a copy of SGLang's tree may hold only some platforms' files, and the cases do not depend on them.
PERF_BASELINE_FILES = {
    "h100": "perf_baselines/h100.json",
    "b200": "perf_baselines/b200.json",
    "5090": "perf_baselines/5090.json",
    "xpu_b60": "perf_baselines/xpu_b60.json",
}
FRAGMENT_FILES = ("ascend/perf_baselines_npu.json", "musa/perf_baselines_musa.json")
PLACEHOLDER_PRIMARY = {
    "scenarios": {},
    "sampling": {"step_fractions": [0.0]},
    "tolerances": {
        "pr_test": dict.fromkeys(("e2e", "denoise_stage", "non_denoise_stage", "denoise_step", "denoise_agg"), 0)
    },
}


@dataclass(frozen=True)
class SuiteCase:
    """One of SGLang's ``DiffusionTestCase`` objects and the suites it is in."""

    suites: tuple[str, ...]
    case: Any  # sglang's DiffusionTestCase


@dataclass(frozen=True)
class CaseLists:
    """What a load gave: every suite of the platform (name -> cases), how it was loaded, from where."""

    source: Source
    hardware: str
    suites: dict[str, list[Any]]
    mode: str  # "import" (the installed sglang) or "stand-ins"
    notes: tuple[str, ...] = field(default_factory=tuple)

    def select(self, names: Sequence[str] | None = None) -> list[SuiteCase]:
        """The cases of ``names`` (default: the suites SGLang's CI runs on this platform), each once."""
        names = list(names) if names else [s for s in DEFAULT_SUITES[self.hardware] if s in self.suites]
        unknown = [n for n in names if n not in self.suites]
        if unknown:
            raise DiffperfError(
                f"unknown suite {unknown[0]!r}; on {self.hardware} SGLang has: {', '.join(self.suites)}",
                source=str(self.source.gpu_cases),
                key="suite",
            )
        chosen: dict[str, SuiteCase] = {}
        for name in names:
            for case in self.suites[name]:
                seen = chosen.get(case.id)
                if seen is None:
                    chosen[case.id] = SuiteCase((name,), case)
                elif seen.case == case:
                    chosen[case.id] = SuiteCase((*seen.suites, name), case)
                else:
                    raise DiffperfError(
                        f"case {case.id!r} is defined differently in suites {seen.suites[0]!r} and {name!r}: "
                        "choose one of them",
                        source=str(self.source.gpu_cases),
                        key="suite",
                    )
        return list(chosen.values())


def load(source: Source, hardware: str | None = None, *, table: task_types.TaskTypeTable | None = None) -> CaseLists:
    """Run SGLang's case files from ``source`` as on ``hardware`` (default h100, as SGLang's CI); every suite."""
    hardware = canonical_platform(hardware) if hardware else DEFAULT_GPU
    notes: list[str] = []
    if source.installed:
        modules = _real_import(hardware, notes)
        if modules is not None:
            return CaseLists(source, hardware, _suites(modules), "import", tuple(notes))
    modules = _with_standins(source, hardware, table or task_types.load_table(), notes)
    return CaseLists(source, hardware, _suites(modules), "stand-ins", tuple(notes))


def _kinds(hardware: str) -> list[str]:
    kind = device_kind(hardware)
    return [kind] if kind in ("npu", "musa") else ["gpu"]


def _real_import(hardware: str, notes: list[str]) -> dict[str, ModuleType] | None:
    """The installed sglang's case modules, imported for real; None (and a note) when sglang cannot import them."""
    before = {n for n in sys.modules if n == "sglang" or n.startswith("sglang.")}
    try:
        return {kind: importlib.import_module(CASE_MODULES[kind][0]) for kind in _kinds(hardware)}
    except ImportError as exc:
        for name in [n for n in sys.modules if (n == "sglang" or n.startswith("sglang.")) and n not in before]:
            del sys.modules[name]
        notes.append(f"the installed sglang does not import ({exc}); loaded its files with stand-ins instead")
        return None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (SGLang's own code failed: say what it said)
        raise DiffperfError(f"importing SGLang's case lists failed: {_failure(exc)}") from None


def _with_standins(
    source: Source, hardware: str, table: task_types.TaskTypeTable, notes: list[str]
) -> dict[str, ModuleType]:
    loaded = load_with_standins(source, hardware, table=table, notes=notes)
    return {kind: loaded[CASE_MODULES[kind][0]] for kind in _kinds(hardware)}


def load_with_standins(
    source: Source,
    hardware: str,
    *,
    table: task_types.TaskTypeTable | None = None,
    extra: Mapping[str, ModuleType] | None = None,
    also: Sequence[str] = (),
    notes: list[str] | None = None,
) -> dict[str, ModuleType]:
    """SGLang's files run with ``standins``: testcase_configs, the case files of ``hardware``, then ``also``.

    ``also`` are more files under ``test/server`` (``"test_server_utils.py"``, ...), loaded as their
    module names after the case files; ``extra`` adds stand-ins (see ``standins.standin_modules``).
    Returns every module of SGLang's that ran (those files and the ones they imported), by module name.
    """
    notes = [] if notes is None else notes
    modules = standins.standin_modules(source.root, hardware, table=table or task_types.load_table(), extra=extra)
    loaded: dict[str, ModuleType] = {}
    with (
        standins.installed(modules),
        contextlib.redirect_stdout(io.StringIO()),
        tempfile.TemporaryDirectory() as tmp,
    ):
        configs = _testcase_configs_path(source.server_dir, hardware, Path(tmp), notes)
        name = f"{SERVER}.testcase_configs"
        loaded[name] = _run(name, configs, source.server_dir / "testcase_configs.py")
        files = [CASE_MODULES[kind] for kind in _kinds(hardware)]
        files += [(f"{SERVER}.{Path(rel).with_suffix('').as_posix().replace('/', '.')}", Path(rel)) for rel in also]
        for name, rel in files:
            loaded[name] = _run(name, source.server_dir / rel, source.server_dir / rel)
        ran = {n: m for n, m in sys.modules.items() if n.startswith("sglang.") and modules.get(n) is not m}
    return {**ran, **loaded}


def _failure(exc: BaseException) -> str:
    """What SGLang's code did instead of defining its cases (a ``sys.exit`` too: it must not end the run)."""
    return f"it called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"


def _run(name: str, path: Path, shown: Path) -> ModuleType:
    if not path.is_file():
        raise DiffperfError("SGLang's case file is missing", source=str(shown))
    try:
        return standins.load_source_module(name, path)
    except DiffperfError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (SGLang's code failed under the stand-ins: say where)
        raise DiffperfError(
            f"loading failed: {_failure(exc)} (pytest-diffperf's stand-ins for the sglang "
            "runtime may not cover this version of SGLang's case files)",
            source=str(shown),
        ) from None


def _testcase_configs_path(server_dir: Path, hardware: str, tmp: Path, notes: list[str]) -> Path:
    """testcase_configs.py itself, or a copy next to placeholders for the baseline files it reads but the tree lacks."""
    override = os.environ.get("SGLANG_DIFFUSION_PERF_BASELINE_PLATFORM")
    platform = canonical_platform(override) if override else baseline_platform(hardware)
    needed = [PERF_BASELINE_FILES.get(platform, PERF_BASELINE_FILES[DEFAULT_GPU]), *FRAGMENT_FILES]
    missing = [rel for rel in needed if not (server_dir / rel).is_file()]
    if not missing:
        return server_dir / "testcase_configs.py"
    notes.append(f"{server_dir} lacks {', '.join(missing)}: read with empty placeholders (the cases do not use them)")
    copy = tmp / "testcase_configs.py"
    shutil.copyfile(server_dir / "testcase_configs.py", copy)
    for rel in needed:
        target = copy.parent / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel in missing:
            target.write_text(
                json.dumps(PLACEHOLDER_PRIMARY if rel.startswith("perf_baselines/") else {"scenarios": {}})
            )
        else:
            shutil.copyfile(server_dir / rel, target)
    return copy


def baseline_platform(hardware: str) -> str:
    """The perf-baseline platform SGLang's get_perf_baseline_platform() picks on ``hardware``."""
    canonical = canonical_platform(hardware)
    return canonical if canonical in PERF_BASELINE_FILES else DEFAULT_GPU


def _suites(modules: Mapping[str, ModuleType]) -> dict[str, list[Any]]:
    suites: dict[str, list[Any]] = {}
    for kind, module in modules.items():
        if kind == "musa":
            groups = {s: [("", getattr(module, n))] for s, n in MUSA_SUITE_LISTS.items() if hasattr(module, n)}
        else:
            groups = dict(getattr(module, "PARAMETRIZED_CASE_GROUPS", {}))
            groups.update({s: [("", getattr(module, n))] for s, n in FILE_SUITE_LISTS.items() if hasattr(module, n)})
        for suite, files in groups.items():
            suites[suite] = [case for _file, cases in files for case in cases]
    return suites
