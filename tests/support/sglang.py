"""SGLang 0.5.23's own harness and case files, loaded from the vendored copy on the package's stand-ins.

``load_harness`` runs SGLang's real ``testcase_configs.py``, case files, ``test_server_utils.py`` and
``test_server_common.py`` (with ``perf_logger.py``, ``test_utils.py`` and ``configs/task_type.py``)
through ``caselist.load_with_standins``: ``pytest_diffperf.sglang.standins`` stands in for the sglang
runtime, as when the plugin reads the case lists. Added only here, for what the harness imports
besides the case files: a real ``kill_process_tree`` (SGLang's teardown kills the server's tree),
Slack upload (a no-op), the realtime helpers and ``benchmarks.compare_perf`` (its bound formula);
and the registry also answers the reference server's tiny models, so SGLang's ``ServerManager`` and
``get_generate_fn`` can drive the reference server.

Also here: ``decode``, which parses a captured request the way the server parses it (``Body``), and
``write_input_image``, the local file that stands in for a downloaded reference image.
"""

from __future__ import annotations

import contextlib
import email.message
import email.parser
import email.policy
import email.utils
import hashlib
import inspect
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import psutil

from pytest_diffperf.sglang import caselist, standins, task_types
from pytest_diffperf.sglang.source import SERVER_DIR, Source, locate
from tests.support.paths import SGLANG_DATA

VENDORED = SGLANG_DATA / "v0.5.23"
SRC = VENDORED / "src"
H100_BASELINES = VENDORED / "perf_baselines" / "h100.json"
SERVER = caselist.SERVER
MG = standins.MG
HARNESS_FILES = ("test_server_utils.py", "test_server_common.py")
# What SGLang's registry would answer for the reference server's models (the hub knows none of them).
TINY_TASK_TYPES: dict[str, task_types.TaskType] = {
    "tiny/flux-t2i": "T2I",
    "tiny/sd-t2i": "T2I",
    "tiny/flux-kontext-edit": "TI2I",
    "tiny/wan-t2v": "T2V",
    "tiny/wan-i2v": "I2V",
}
# A multipart file field name -> the one the real edit endpoint reads it as (image_api.py: images = image or image[]).
FILE_FIELDS = {"image[]": "image"}
REALTIME_NAMES = (
    "RealtimeChunkStats",
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
)


def available() -> bool:
    """Whether the vendored SGLang sources are there (the tests that need them skip otherwise)."""
    return all((SRC / SERVER_DIR / name).is_file() for name in ("gpu_cases.py", *HARNESS_FILES))


def kill_process_tree(parent_pid: int, include_parent: bool = True, skip_pid: int | None = None) -> None:
    """SGLang's ``runtime/utils/process.kill_process_tree``: SIGKILL the process's descendants (and itself)."""
    try:
        parent = psutil.Process(parent_pid)
    except psutil.NoSuchProcess:
        return
    procs = [p for p in parent.children(recursive=True) if p.pid != skip_pid]
    procs += [parent] if include_parent else []
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()


def _realtime_unsupported(*_args: Any, **_kwargs: Any) -> Any:
    raise NotImplementedError("realtime cases are not run by pytest-diffperf's tests")


def _calculate_upper_bound(expected: float, tolerance: float, min_abs_tolerance: float) -> float:
    """``benchmarks/compare_perf.calculate_upper_bound`` (not vendored): the one limit formula."""
    return max(expected * (1 + tolerance), expected + min_abs_tolerance)


def harness_standins() -> dict[str, ModuleType]:
    """The stand-ins the harness needs beyond the case files'."""
    return {
        f"{MG}.runtime.utils.process": standins.module(
            f"{MG}.runtime.utils.process", kill_process_tree=kill_process_tree
        ),
        f"{SERVER}.common": standins.absent_module(f"{SERVER}.common"),
        f"{SERVER}.common.slack": standins.module(
            f"{SERVER}.common.slack", upload_file_to_slack=lambda *_a, **_k: None
        ),
        f"{SERVER}.realtime_consistency": standins.module(
            f"{SERVER}.realtime_consistency", **dict.fromkeys(REALTIME_NAMES, _realtime_unsupported)
        ),
        f"{MG}.benchmarks": standins.absent_module(f"{MG}.benchmarks"),
        f"{MG}.benchmarks.compare_perf": standins.module(
            f"{MG}.benchmarks.compare_perf", calculate_upper_bound=_calculate_upper_bound
        ),
    }


def harness_table() -> task_types.TaskTypeTable:
    """The checked-in task-type table, and the reference server's tiny models."""
    table = task_types.load_table()
    return task_types.TaskTypeTable({**table.models, **TINY_TASK_TYPES}, table.pipelines, table.sources)


@dataclass(frozen=True)
class Harness:
    """SGLang's loaded modules (they keep working once loading is over), by role."""

    source: Source
    modules: dict[str, ModuleType]

    @property
    def configs(self) -> ModuleType:
        return self.modules[f"{SERVER}.testcase_configs"]

    @property
    def gpu_cases(self) -> ModuleType:
        return self.modules[f"{SERVER}.gpu_cases"]

    @property
    def utils(self) -> ModuleType:
        return self.modules[f"{SERVER}.test_server_utils"]

    @property
    def common(self) -> ModuleType:
        return self.modules[f"{SERVER}.test_server_common"]

    @property
    def test_utils(self) -> ModuleType:
        return self.modules[f"{MG}.test.test_utils"]

    @property
    def diffusion_server(self) -> Callable[..., Iterator[Any]]:
        """SGLang's ``diffusion_server`` fixture as the generator function it decorates, to run with a case:
        ``inspect.unwrap`` follows the ``__wrapped__`` that every pytest since 8.0 sets on a fixture."""
        return inspect.unwrap(self.common.diffusion_server)

    @property
    def perf_logger(self) -> ModuleType:
        return self.modules[f"{MG}.runtime.utils.perf_logger"]


def load_harness(hardware: str = "h100") -> Harness:
    """SGLang's harness modules and the case files of ``hardware``, loaded fresh (about as long as the case lists)."""
    source = locate(SRC)
    modules = caselist.load_with_standins(
        source, hardware, table=harness_table(), extra=harness_standins(), also=HARNESS_FILES
    )
    return Harness(source, modules)


@dataclass(frozen=True)
class Body:
    """A request as the server parses it: path, fields (multipart values JSON-decoded), file parts by hash."""

    path: str
    fields: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    multipart: bool = False


def decode(path: str, content_type: str, content: bytes) -> Body:
    """JSON or multipart; None values dropped (the real server's request fields default to None)."""
    if content_type.startswith("application/json"):
        return Body(path, _without_none(json.loads(content)))
    if not content_type.startswith("multipart/form-data"):
        raise AssertionError(f"unexpected content type {content_type!r}")
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + content
    )
    fields: dict[str, Any] = {}
    files: dict[str, str] = {}
    for part in message.iter_parts():
        name = _disposition_param(part, "name")
        payload = part.get_payload(decode=True)
        if name is None or not isinstance(payload, bytes):
            raise AssertionError(f"unexpected multipart part {part.items()!r}: a field needs a name and a body")
        if _disposition_param(part, "filename") is not None:
            files[FILE_FIELDS.get(name, name)] = hashlib.sha256(payload).hexdigest()
        else:
            text = payload.decode()
            try:
                fields[name] = json.loads(text)
            except json.JSONDecodeError:
                fields[name] = text
    return Body(path, _without_none(fields), files, multipart=True)


def _disposition_param(part: email.message.Message, param: str) -> str | None:
    """A Content-Disposition parameter; an RFC 2231 one (``name*=utf-8''...``) decoded, as servers do."""
    value = part.get_param(param, header="content-disposition")
    return email.utils.collapse_rfc2231_value(value) if isinstance(value, tuple) else value


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def write_input_image(path: Path) -> Path:
    """A small JPEG standing in for a downloaded reference image (the same bytes reach both sides)."""
    import numpy as np
    from PIL import Image

    Image.fromarray(np.full((16, 16, 3), 127, np.uint8)).save(path, format="JPEG")
    return path
