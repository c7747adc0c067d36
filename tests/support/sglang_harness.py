"""Load SGLang 0.5.23's own test harness from the vendored sources, with small stand-ins for the rest of sglang.

Real files: ``runtime/utils/perf_logger.py``, ``configs/task_type.py``, ``test/test_utils.py``,
``test/server/testcase_configs.py``, ``gpu_cases.py``, ``test_server_utils.py`` and
``test_server_common.py``. Everything else they import from sglang is a stand-in below, one small
builder per module (the list is in the fidelity review, §5.2). Third-party modules are the real
ones (openai, torch, cv2, dateutil, httpx); the stand-ins only replace sglang's own modules.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import shutil
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

VENDOR = Path(__file__).resolve().parents[1] / "vendor" / "sglang-data" / "v0.5.23"
VENDOR_SGLANG = VENDOR / "src" / "sglang"
MG = "sglang.multimodal_gen"

# The registry stand-in's table: what SGLang's registry would resolve for the reference server's models.
TINY_TASK_TYPES = {
    "tiny/flux-t2i": "T2I",
    "tiny/sd-t2i": "T2I",
    "tiny/flux-kontext-edit": "TI2I",
    "tiny/wan-t2v": "T2V",
    "tiny/wan-i2v": "I2V",
}


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


# ---- stand-ins shared with loading testcase_configs.py + gpu_cases.py ---------------------------
def envs_standin() -> types.ModuleType:
    return _module(f"{MG}.envs", SGLANG_DIFFUSION_STAGE_LOGGING=True)


class _Platform:
    """``current_platform``: a CUDA box (H100) unless ``cuda=False``."""

    def __init__(self, cuda: bool) -> None:
        self._cuda = cuda

    def is_cuda(self) -> bool:
        return self._cuda

    def get_available_gpu_memory(self, empty_cache: bool = False) -> float:
        return 0.0

    def __getattr__(self, name: str) -> Any:
        if name.startswith("is_"):
            return lambda *args, **kwargs: False
        raise AttributeError(name)


def platforms_standin(cuda: bool = True) -> types.ModuleType:
    return _module(f"{MG}.runtime.platforms", current_platform=_Platform(cuda))


def logging_utils_standin() -> types.ModuleType:
    return _module(
        f"{MG}.runtime.utils.logging_utils",
        init_logger=logging.getLogger,
        globally_suppress_loggers=lambda: None,
        CYAN="",
        RESET="",
        _SGLDiffusionLogger=logging.Logger,
        get_is_main_process=lambda: True,
    )


def common_standin() -> types.ModuleType:
    def get_bool_env_var(name: str, default: str = "false") -> bool:
        return os.environ.get(name, default).strip().lower() in ("1", "true", "yes", "on")

    return _module(f"{MG}.runtime.utils.common", get_bool_env_var=get_bool_env_var)


def metrics_standin() -> types.ModuleType:
    return _module(f"{MG}.runtime.observability.metrics", get_metrics=lambda: None)


def pipeline_configs_base_standin(task_type: types.ModuleType) -> types.ModuleType:
    return _module(f"{MG}.configs.pipeline_configs.base", ModelTaskType=task_type.ModelTaskType)


def sampling_params_standin() -> types.ModuleType:
    aliases = {"extra-high": "lossless"}  # sampling_params.py:62-64, 149-157

    def normalize_quality(quality: str) -> str:
        value = quality.strip().lower()
        return aliases.get(value, value)

    return _module(f"{MG}.configs.sample.sampling_params", normalize_quality=normalize_quality)


def registry_standin(task_type: types.ModuleType, default: str | None = None) -> types.ModuleType:
    """``get_model_info`` from ``TINY_TASK_TYPES``; other models get ``default`` (None: unresolved)."""

    def get_model_info(model_path: str, **kwargs: Any) -> Any:
        name = TINY_TASK_TYPES.get(model_path, default)
        if name is None:
            return None
        return types.SimpleNamespace(pipeline_config_cls=types.SimpleNamespace(task_type=task_type.ModelTaskType[name]))

    return _module(f"{MG}.registry", get_model_info=get_model_info, get_pipeline_config_classes=lambda name: None)


def srt_environ_standin() -> types.ModuleType:
    unset = types.SimpleNamespace(get=lambda: None)
    return _module("sglang.srt.environ", envs=types.SimpleNamespace(SGLANG_TEST_TI2I_INPUT_IMAGE=unset))


# ---- stand-ins only the server harness needs ------------------------------------------------------
def process_standin() -> types.ModuleType:
    def kill_process_tree(pid: int) -> None:
        try:
            parent = psutil.Process(pid)
        except psutil.NoSuchProcess:
            return
        for proc in [*parent.children(recursive=True), parent]:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()

    return _module(f"{MG}.runtime.utils.process", kill_process_tree=kill_process_tree)


def slack_standin() -> types.ModuleType:
    return _module(f"{MG}.test.server.common.slack", upload_file_to_slack=lambda **kwargs: None)


def realtime_consistency_standin() -> types.ModuleType:
    def unsupported(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("realtime cases are not run against the reference server")

    names = [
        "build_realtime_init_payload",
        "collect_realtime_output",
        "encode_realtime_frames_to_mp4",
        "prepare_realtime_first_frame",
        "realtime_ws_url",
        "record_realtime_key_frames",
        "record_realtime_perf_stats",
        "pop_realtime_e2e_ms",
        "pop_realtime_key_frames",
        "pop_realtime_perf_stats",
        "validate_realtime_perf_stats",
    ]
    return _module(
        f"{MG}.test.server.realtime_consistency",
        RealtimeChunkStats=type("RealtimeChunkStats", (), {}),
        **dict.fromkeys(names, unsupported),
    )


def compare_perf_standin() -> types.ModuleType:
    def calculate_upper_bound(expected: float, tolerance: float, min_abs_tolerance: float) -> float:
        return max(expected * (1 + tolerance), expected + min_abs_tolerance)

    return _module(f"{MG}.benchmarks.compare_perf", calculate_upper_bound=calculate_upper_bound)


# ---- loading ---------------------------------------------------------------------------------------
@dataclass
class Harness:
    perf_logger: types.ModuleType
    test_utils: types.ModuleType
    testcase_configs: types.ModuleType
    test_server_utils: types.ModuleType | None = None
    test_server_common: types.ModuleType | None = None
    gpu_cases: types.ModuleType | None = None


def _package(name: str, path: Path) -> types.ModuleType:
    return _module(name, __path__=[str(path)], __file__=str(path / "__init__.py"), __package__=name)


def available() -> bool:
    return (VENDOR_SGLANG / "multimodal_gen" / "test" / "server" / "test_server_common.py").is_file()


_WHEEL: list[Path] = []


def wheel_layout() -> Path:
    """The vendored sources copied once into the wheel's layout, with the baseline files where
    ``testcase_configs.py`` reads them (``test/server/perf_baselines/``, ``ascend/``, ``musa/``; the
    MUSA fragment is not vendored, so an empty one stands in)."""
    if not _WHEEL:
        root = Path(tempfile.mkdtemp(prefix="sglang-wheel-")) / "sglang"
        shutil.copytree(VENDOR_SGLANG, root)
        server = root / "multimodal_gen" / "test" / "server"
        shutil.copytree(VENDOR / "perf_baselines", server / "perf_baselines")
        shutil.copy(VENDOR / "ascend" / "perf_baselines_npu.json", server / "ascend" / "perf_baselines_npu.json")
        (server / "musa" / "perf_baselines_musa.json").write_text('{"scenarios": {}}')
        _WHEEL.append(root)
    return _WHEEL[0]


def load(
    *, server: bool = True, gpu_cases: bool = False, cuda: bool = True, default_task: str | None = None
) -> Harness:
    """Import SGLang's harness modules (fresh each call) with the stand-ins in ``sys.modules``.

    ``server`` adds test_server_utils/test_server_common, ``gpu_cases`` the case lists (whose models
    the registry stand-in answers with ``default_task``; their command lines do not depend on it).
    """
    for name in [n for n in sys.modules if n == "sglang" or n.startswith("sglang.")]:
        del sys.modules[name]
    SGLANG_DIR = wheel_layout()
    packages = {
        "sglang": SGLANG_DIR,
        MG: SGLANG_DIR / "multimodal_gen",
        "sglang.srt": SGLANG_DIR / "srt",
        f"{MG}.benchmarks": SGLANG_DIR / "multimodal_gen" / "benchmarks",
        f"{MG}.test.server.common": SGLANG_DIR / "multimodal_gen" / "test" / "server" / "common",
        f"{MG}.configs.pipeline_configs": SGLANG_DIR / "multimodal_gen" / "configs" / "pipeline_configs",
        f"{MG}.runtime.observability": SGLANG_DIR / "multimodal_gen" / "runtime" / "observability",
    }
    for name, path in packages.items():
        sys.modules[name] = _package(name, path)
    task_type = importlib.import_module(f"{MG}.configs.task_type")
    standins = [
        envs_standin(),
        platforms_standin(cuda),
        logging_utils_standin(),
        common_standin(),
        metrics_standin(),
        pipeline_configs_base_standin(task_type),
        sampling_params_standin(),
        registry_standin(task_type, default_task),
        srt_environ_standin(),
        process_standin(),
        slack_standin(),
        realtime_consistency_standin(),
        compare_perf_standin(),
    ]
    for module in standins:
        sys.modules[module.__name__] = module
    harness = Harness(
        perf_logger=importlib.import_module(f"{MG}.runtime.utils.perf_logger"),
        test_utils=importlib.import_module(f"{MG}.test.test_utils"),
        testcase_configs=importlib.import_module(f"{MG}.test.server.testcase_configs"),
    )
    if server:
        harness.test_server_utils = importlib.import_module(f"{MG}.test.server.test_server_utils")
        harness.test_server_common = importlib.import_module(f"{MG}.test.server.test_server_common")
    if gpu_cases:
        harness.gpu_cases = importlib.import_module(f"{MG}.test.server.gpu_cases")
    return harness
