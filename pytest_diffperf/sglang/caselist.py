"""SGLang's case lists, run for real: the dataclasses after ``__post_init__``, by suite, for one platform.

The case files are executed (with ``standins`` unless the installed sglang imports for real), so
everything ``DiffusionTestCase.__post_init__`` computes (the quality pins, default sampling
parameters, modality) and every platform branch of ``gpu_cases.py`` is as SGLang's CI sees it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import json
import os
import shutil
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import DiffperfError
from ..platforms import DEFAULT_GPU, Platform, canonical_platform, device_kind
from . import guard, inference, release, standins, suites, task_types
from .source import Source

MG = standins.MG
SERVER = f"{MG}.test.server"
TESTCASE_CONFIGS = (f"{SERVER}.testcase_configs", Path("testcase_configs.py"))  # the GPU lists before gpu_cases.py
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
# The baseline files testcase_configs.py reads at import (relative to it), and stand-ins for missing ones:
# a copy of SGLang's tree may hold only some platforms' files, and the cases do not depend on them.
PERF_BASELINE_FILES = {
    "h100": "perf_baselines/h100.json",
    "b200": "perf_baselines/b200.json",
    "5090": "perf_baselines/5090.json",
    "xpu_b60": "perf_baselines/xpu_b60.json",
}
SINGLE_BASELINE_FILE = "perf_baselines.json"  # releases before perf_baselines/<platform>.json read this one
FRAGMENT_FILES = ("ascend/perf_baselines_npu.json", "musa/perf_baselines_musa.json")
_TOLERANCES = ("e2e", "denoise_stage", "non_denoise_stage", "denoise_step", "denoise_agg")
PLACEHOLDER_PRIMARY = {
    "scenarios": {},
    "sampling": {"step_fractions": [0.0]},
    # by profile (pr_test) since 0.5.8 or so; flat in the releases before
    "tolerances": {"pr_test": dict.fromkeys(_TOLERANCES, 0), **dict.fromkeys(_TOLERANCES, 0)},
}


class NoLists(DiffperfError):
    """The release has no case lists for the platform asked for."""


@dataclass(frozen=True)
class SuiteCase:
    """One of SGLang's ``DiffusionTestCase`` objects and the suites it is in."""

    suites: tuple[str, ...]
    case: Any  # sglang's DiffusionTestCase


@dataclass(frozen=True)
class CaseLists:
    """What a load gave: every suite of the platform (name -> cases), how it was loaded, from where."""

    source: Source
    hardware: Platform
    suites: dict[str, list[Any]]
    mode: str  # "import" (the installed sglang) or "stand-ins"
    notes: tuple[str, ...] = field(default_factory=tuple)
    inferred: dict[str, str] = field(default_factory=dict)  # model -> the note saying how its task type was inferred
    undecided: dict[str, str] = field(default_factory=dict)  # case id -> why its model's task type is unknown
    table: task_types.TaskTypeTable | None = None  # the task types it was loaded with (the inferred ones added)

    @property
    def default_suites(self) -> list[str]:
        """The suites SGLang's CI runs on this platform (by their names, ``suites.platforms_of``)."""
        return suites.default_suites(self.hardware, list(self.suites))

    @property
    def unmapped(self) -> list[str]:
        """Suites with cases that the plugin maps to no platform (run only when named)."""
        return [n for n, cases in self.suites.items() if cases and not suites.platforms_of(n).platforms]

    def select(self, names: Sequence[str] | None = None) -> list[SuiteCase]:
        """The cases of ``names`` (default: the suites SGLang's CI runs on this platform), each once; DiffperfError
        when the release has no suite for this platform."""
        if not names and not self.default_suites:
            which = release.identify(self.source.root, installed=self.source.installed)
            raise NoLists(
                f"SGLang {which} has no case lists for {self.hardware} (its suites: "
                f"{', '.join(n for n, cases in self.suites.items() if cases) or 'none'}): name one with "
                "--diffperf-suites (diffperf import-cases --suite), or read the lists as on another platform",
                source=str(self.source.gpu_cases),
                key="suite",
            )
        names = list(names) if names else self.default_suites
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


def load(
    source: Source, hardware: Platform | None = None, *, table: task_types.TaskTypeTable | None = None
) -> CaseLists:
    """Run SGLang's case files from ``source`` as on ``hardware`` (default h100, as SGLang's CI); every suite.

    A model the task-type table lacks gets the type the installed sglang's registry gives, else the one its
    cases' own fields say (``inference``); the cases of a model nothing decides are ``undecided``, while every
    other case loads.
    """
    hardware = hardware or DEFAULT_GPU
    table = table or task_types.load_table()
    limit_s = guard.timeout_s()  # a bad $DIFFPERF_SGLANG_LOAD_TIMEOUT is an error even when the lists are cached
    notes: list[str] = []
    if source.installed:
        modules = _real_import(source, hardware, notes)
        if modules is not None:
            return CaseLists(source, hardware, _suites(source, modules), "import", tuple(notes), table=table)
    first = standins.Assumption(inference.PROBES[0])
    modules = _with_standins(source, hardware, table, notes, first)
    if not first.models:
        return CaseLists(source, hardware, _suites(source, modules), "stand-ins", tuple(notes), table=table)
    registry = inference.from_registry(first.models, limit_s)
    asked = {
        m: f"model {m!r} is in no task-type table: {t}, from the installed sglang's registry"
        for m, t in registry.items()
    }
    if registry:
        table = table.with_models(registry)
        first = standins.Assumption(inference.PROBES[0])
        modules = _with_standins(source, hardware, table, [], first)
        if not first.models:
            return CaseLists(source, hardware, _suites(source, modules), "stand-ins", tuple(notes), asked, table=table)
    second = standins.Assumption(inference.PROBES[1])
    other = _with_standins(source, hardware, table, [], second)
    found = inference.resolve(first.models, _by_id(_suites(source, modules)), _by_id(_suites(source, other)))
    table = table.with_models(found.task_types)
    if found.task_types:
        modules = _with_standins(source, hardware, table, [], standins.Assumption(inference.PROBES[0]))
    inferred = {**asked, **found.notes}
    return CaseLists(
        source, hardware, _suites(source, modules), "stand-ins", tuple(notes), inferred, found.undecided, table
    )


def _by_id(suites: Mapping[str, list[Any]]) -> dict[str, Any]:
    return {case.id: case for cases in suites.values() for case in cases}


def from_modules(source: Source, hardware: Platform, loaded: Mapping[str, ModuleType], like: CaseLists) -> CaseLists:
    """The lists of modules ``load_with_standins`` ran (for instance with SGLang's harness besides), with what
    ``like`` (the same lists loaded by ``load``) inferred and could not."""
    modules = {kind: loaded[_case_module(source, kind)[0]] for kind in _kinds(hardware)}
    return CaseLists(
        source, hardware, _suites(source, modules), "stand-ins", like.notes, like.inferred, like.undecided, like.table
    )


def _kinds(hardware: Platform) -> list[str]:
    kind = device_kind(hardware)
    return [kind] if kind in ("npu", "musa") else ["gpu"]


def _case_module(source: Source, kind: str) -> tuple[str, Path]:
    """The module of ``kind``'s lists: for GPUs ``gpu_cases.py``, or ``testcase_configs.py`` before it existed."""
    return TESTCASE_CONFIGS if kind == "gpu" and not source.has_gpu_cases else CASE_MODULES[kind]


def _real_import(source: Source, hardware: Platform, notes: list[str]) -> dict[str, ModuleType] | None:
    """The installed sglang's case modules, imported for real; None (and a note) when sglang cannot import them."""
    before = {n for n in sys.modules if n == "sglang" or n.startswith("sglang.")}
    try:
        with guard.foreign_code("case lists", str(source.gpu_cases)):
            return {kind: importlib.import_module(_case_module(source, kind)[0]) for kind in _kinds(hardware)}
    except DiffperfError:
        raise
    except ImportError as exc:
        for name in [n for n in sys.modules if (n == "sglang" or n.startswith("sglang.")) and n not in before]:
            del sys.modules[name]
        notes.append(f"the installed sglang does not import ({exc}); loaded its files with stand-ins instead")
        return None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (SGLang's own code failed: say what it said)
        raise DiffperfError(f"importing SGLang's case lists failed: {_failure(exc)}") from None


@dataclass(frozen=True)
class _Loaded:
    stamps: dict[Path, tuple[int, int] | None]
    modules: dict[str, ModuleType]
    notes: list[str]
    assumed: list[str]


# Case modules loaded with stand-ins, by what decides them (see ``_with_standins``).
_LOADED: dict[tuple[object, ...], _Loaded] = {}


def _with_standins(
    source: Source,
    hardware: Platform,
    table: task_types.TaskTypeTable,
    notes: list[str],
    assumed: standins.Assumption,
) -> dict[str, ModuleType]:
    """The case modules of ``hardware``, run once per process for each tree, task-type
    table, assumption and baseline-platform override while none of the files that run read changed (``diffperf
    lint --cases`` reads every platform's); ``assumed.models`` gets the models the table lacked."""
    override = os.environ.get("SGLANG_DIFFUSION_PERF_BASELINE_PLATFORM")
    answers = (tuple(table.models.items()), tuple(table.pipelines.items()), assumed.task)
    key = (source.root.resolve(), source.installed, hardware, answers, override)
    hit = _LOADED.get(key)
    if hit is None or _stamps(hit.stamps) != hit.stamps:
        own_notes: list[str] = []
        loaded = load_with_standins(source, hardware, table=table, notes=own_notes, assumed=assumed)
        modules = {kind: loaded[_case_module(source, kind)[0]] for kind in _kinds(hardware)}
        read = [Path(f) for m in loaded.values() if isinstance(f := getattr(m, "__file__", None), str)]
        read += [p for p in source.server_dir.rglob("*") if p.suffix in (".py", ".json")]
        hit = _LOADED[key] = _Loaded(_stamps(dict.fromkeys(read)), modules, own_notes, list(assumed.models))
    notes.extend(hit.notes)
    assumed.models[:] = hit.assumed
    return hit.modules


def _stamps(paths: Mapping[Path, object]) -> dict[Path, tuple[int, int] | None]:
    """Each file's modification time and size (None where it is gone)."""
    out: dict[Path, tuple[int, int] | None] = {}
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            out[path] = None
        else:
            out[path] = (stat.st_mtime_ns, stat.st_size)
    return out


def load_with_standins(
    source: Source,
    hardware: Platform,
    *,
    table: task_types.TaskTypeTable | None = None,
    extra: Mapping[str, ModuleType] | None = None,
    also: Sequence[str] = (),
    notes: list[str] | None = None,
    assumed: standins.Assumption | None = None,
) -> dict[str, ModuleType]:
    """SGLang's files run with ``standins``: testcase_configs, the case files of ``hardware``, then ``also``.

    ``also`` are more files under ``test/server`` (``"test_server_utils.py"``, ...), loaded as their
    module names after the case files; ``extra`` adds stand-ins and ``assumed`` answers the registry for models
    the table lacks (see ``standins.standin_modules``).
    Returns every module of SGLang's that ran (those files and the ones they imported), by module name.
    """
    notes = [] if notes is None else notes
    table = table or task_types.load_table()
    modules = standins.standin_modules(source.root, hardware, table=table, extra=extra, assumed=assumed)
    loaded: dict[str, ModuleType] = {}
    with (
        standins.installed(modules),
        contextlib.redirect_stdout(io.StringIO()),
        tempfile.TemporaryDirectory() as tmp,
    ):
        configs = _testcase_configs_path(source.server_dir, hardware, Path(tmp), notes)
        name = TESTCASE_CONFIGS[0]
        loaded[name] = _run(name, configs, source.server_dir / TESTCASE_CONFIGS[1], source)
        files = [_case_module(source, kind) for kind in _kinds(hardware)]
        files = [entry for entry in files if entry != TESTCASE_CONFIGS]
        files += [(f"{SERVER}.{Path(rel).with_suffix('').as_posix().replace('/', '.')}", Path(rel)) for rel in also]
        for name, rel in files:
            loaded[name] = _run(name, source.server_dir / rel, source.server_dir / rel, source)
        ran = {n: m for n, m in sys.modules.items() if n.startswith("sglang.") and modules.get(n) is not m}
    return {**ran, **loaded}


def _run(name: str, path: Path, shown: Path, source: Source) -> ModuleType:
    if not path.is_file():
        raise NoLists(
            f"this SGLang tree ({release.identify(source.root, installed=source.installed)}) has no {shown.name}: "
            "its release has no case lists for this platform",
            source=str(shown),
        )
    try:
        with guard.foreign_code(f"file {shown.name}", str(shown)):
            return standins.load_source_module(name, path)
    except DiffperfError:
        raise
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (SGLang's code failed under the stand-ins: say where)
        raise _load_failure(exc, shown, source) from None


def _failure(exc: BaseException) -> str:
    """What SGLang's code did instead of defining its cases (a ``sys.exit`` too: it must not end the run)."""
    return f"it called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"


def _load_failure(exc: BaseException, shown: Path, source: Source) -> DiffperfError:
    """One error for SGLang code that did not load: the release, the file (the innermost of the tree's), the cause."""
    which = release.identify(source.root, installed=source.installed)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).is_relative_to(source.root)]
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else str(shown)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return DiffperfError(
            f"SGLang {which}: this file imports {exc.name}, which the tree does not hold and pytest-diffperf "
            "does not stand in (a module newer than this plugin knows, or a file missing from the copy): "
            f"upgrade pytest-diffperf, or use the whole release (pip download --no-deps sglang=={which.version})",
            source=where,
        )
    return DiffperfError(
        f"SGLang {which}: loading failed: {_failure(exc)} (pytest-diffperf's stand-ins for the sglang "
        "runtime may not cover this release's case files: upgrade pytest-diffperf)",
        source=where,
    )


def _testcase_configs_path(server_dir: Path, hardware: Platform, tmp: Path, notes: list[str]) -> Path:
    """testcase_configs.py itself, or a copy next to placeholders for the baseline files it reads but the tree lacks."""
    override = os.environ.get("SGLANG_DIFFUSION_PERF_BASELINE_PLATFORM")
    platform = canonical_platform(override) if override else baseline_platform(hardware)
    text = (server_dir / TESTCASE_CONFIGS[1]).read_text(encoding="utf-8") if server_dir.is_dir() else ""
    if "BASELINE_CONFIG" not in text:
        return server_dir / TESTCASE_CONFIGS[1]  # the release reads no baseline file at import
    own = PERF_BASELINE_FILES.get(platform, "")
    primary = (
        SINGLE_BASELINE_FILE
        if f'"{SINGLE_BASELINE_FILE}"' in text
        else own
        if f'"{Path(own).name}"' in text  # a release that has no file for the platform reads the default GPU's
        else PERF_BASELINE_FILES[DEFAULT_GPU]
    )
    needed = [primary, *(rel for rel in FRAGMENT_FILES if rel in text.replace('" / "', "/"))]
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
            target.write_text(json.dumps(PLACEHOLDER_PRIMARY if rel == primary else {"scenarios": {}}))
        else:
            shutil.copyfile(server_dir / rel, target)
    return copy


def baseline_platform(hardware: Platform) -> Platform:
    """The perf-baseline platform SGLang's get_perf_baseline_platform() picks on ``hardware``."""
    return hardware if hardware in PERF_BASELINE_FILES else DEFAULT_GPU


def _suites(source: Source, modules: Mapping[str, ModuleType]) -> dict[str, list[Any]]:
    """Suite -> cases: the case module's ``PARAMETRIZED_CASE_GROUPS`` where the release has them, else the
    suites ``run_suite.py`` names with the lists their test files use; then the file suites."""
    found: dict[str, list[Any]] = {}
    for kind, module in modules.items():
        if kind == "musa":
            groups = {s: [("", getattr(module, n))] for s, n in MUSA_SUITE_LISTS.items() if hasattr(module, n)}
        elif hasattr(module, "PARAMETRIZED_CASE_GROUPS"):
            groups = _checked_groups(module.PARAMETRIZED_CASE_GROUPS, str(module.__file__))
        else:
            by_suite = suites.list_names_by_suite(source.server_dir.parent)
            if kind != "gpu" and not any(hasattr(module, n) for names in by_suite.values() for n in names):
                by_suite = suites.list_names_by_test_file(Path(module.__file__ or "").parent)
            groups = {
                suite: [("", getattr(module, name)) for name in names if hasattr(module, name)]
                for suite, names in by_suite.items()
            }
            groups = {suite: files for suite, files in groups.items() if files}
        groups.update({s: [("", getattr(module, n))] for s, n in FILE_SUITE_LISTS.items() if hasattr(module, n)})
        for suite, files in groups.items():
            found[suite] = [case for _file, cases in files for case in cases]
            for index, case in enumerate(found[suite]):
                _check_case(case, str(module.__file__), f"{suite}[{index}]")
    return found


def _checked_groups(groups: object, file: str) -> dict[str, list[tuple[str, list[Any]]]]:
    """``PARAMETRIZED_CASE_GROUPS`` as SGLang's runner reads it (suite -> [(test file, cases)]), or one error
    naming the file and the key."""
    where = "PARAMETRIZED_CASE_GROUPS"
    if not isinstance(groups, Mapping):
        raise DiffperfError(
            f"expected a dict of suite -> [(test file, cases)], got {type(groups).__name__}", source=file, key=where
        )
    for suite, files in groups.items():
        if not isinstance(suite, str) or not isinstance(files, list | tuple):
            raise DiffperfError(
                f"expected a suite name and a list of (test file, cases) pairs, got {suite!r}: {type(files).__name__}",
                source=file,
                key=f"{where}[{suite!r}]",
            )
        for index, pair in enumerate(files):
            if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[1], list | tuple)):
                raise DiffperfError(
                    f"expected a (test file, list of DiffusionTestCase) pair, got {pair!r:.80}",
                    source=file,
                    key=f"{where}[{suite!r}][{index}]",
                )
    return {suite: [(str(f), list(cases)) for f, cases in files] for suite, files in groups.items()}


def _check_case(case: object, file: str, where: str) -> None:
    """One error naming the file and the case's place for a case that is not one of SGLang's DiffusionTestCase
    shape (an id, server_args with a model_path, sampling_params)."""
    case_id = getattr(case, "id", None)
    server_args = getattr(case, "server_args", None)
    sampling_params = getattr(case, "sampling_params", None)
    problem = ""
    if not dataclasses.is_dataclass(case) or not isinstance(case_id, str):
        problem = f"expected a DiffusionTestCase (with a string id), got {case!r:.80}"
    elif not isinstance(getattr(server_args, "model_path", None), str):
        problem = f"case {case_id!r}: expected server_args with a string model_path, got {server_args!r:.80}"
    elif not dataclasses.is_dataclass(sampling_params):
        problem = f"case {case_id!r}: expected sampling_params, got {sampling_params!r:.80}"
    if problem:
        raise DiffperfError(problem, source=file, key=where)
