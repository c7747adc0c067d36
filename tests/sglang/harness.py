"""SGLang's own harness (test_server_utils.py, test_server_common.py), loaded from the vendored 0.5.23 copy.

Built on ``pytest_diffperf.sglang``'s stand-ins, plus stand-ins for the few modules only the harness
imports (Slack upload, realtime helpers, process tree, the perf-bound calculator), none of which
the request and command paths use. Request bodies are captured from SGLang's real
``get_generate_fn`` driving the real openai client (2.x, as sglang 0.5.23 pins) over an httpx
``MockTransport``; the plugin's from its real ``client`` over ``requests`` (prepared, not sent).
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_diffperf.sglang import caselist, standins
from pytest_diffperf.sglang.source import Source, locate
from tests.support.paths import REPO

VENDORED = REPO / "tests" / "vendor" / "sglang-data" / "v0.5.23"
SRC = VENDORED / "src"
H100_BASELINES = VENDORED / "perf_baselines" / "h100.json"
SERVER = caselist.SERVER
MG = standins.MG
# A multipart file field name -> the one the real edit endpoint reads it as (image_api.py: images = image or image[]).
FILE_FIELDS = {"image[]": "image"}


def harness_standins() -> dict[str, ModuleType]:
    """The stand-ins the harness needs beyond the case files' (unused by the request and command paths)."""
    return {
        f"{MG}.benchmarks": standins.absent_module(f"{MG}.benchmarks"),
        f"{MG}.benchmarks.compare_perf": standins.absent_module(f"{MG}.benchmarks.compare_perf"),
        f"{MG}.runtime.utils.process": standins.module(
            f"{MG}.runtime.utils.process", kill_process_tree=lambda *_a, **_k: None
        ),
        f"{SERVER}.common": standins.absent_module(f"{SERVER}.common"),
        f"{SERVER}.common.slack": standins.module(
            f"{SERVER}.common.slack", upload_file_to_slack=lambda *_a, **_k: None
        ),
        f"{SERVER}.realtime_consistency": standins.absent_module(f"{SERVER}.realtime_consistency"),
    }


@dataclass(frozen=True)
class Harness:
    source: Source
    modules: dict[str, ModuleType]

    @property
    def utils(self) -> ModuleType:
        return self.modules[f"{SERVER}.test_server_utils"]

    @property
    def common(self) -> ModuleType:
        return self.modules[f"{SERVER}.test_server_common"]

    @property
    def gpu_cases(self) -> ModuleType:
        return self.modules[f"{SERVER}.gpu_cases"]


def load_harness(hardware: str = "h100") -> Harness:
    source = locate(SRC)
    modules = caselist.load_with_standins(
        source, hardware, extra=harness_standins(), also=("test_server_utils.py", "test_server_common.py")
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
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if part.get_param("filename", header="content-disposition") is not None:
            files[FILE_FIELDS.get(name, name)] = hashlib.sha256(payload).hexdigest()
        else:
            text = payload.decode()
            try:
                fields[name] = json.loads(text)
            except json.JSONDecodeError:
                fields[name] = text
    return Body(path, _without_none(fields), files, multipart=True)


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def write_input_image(path: Path) -> Path:
    """A small JPEG standing in for a downloaded reference image (the same bytes reach both sides)."""
    import numpy as np
    from PIL import Image

    Image.fromarray(np.full((16, 16, 3), 127, np.uint8)).save(path, format="JPEG")
    return path
