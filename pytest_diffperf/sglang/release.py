"""Which SGLang release a source is: its wheel's or package's metadata, ``version.py``, or the harness's features.

A tree without metadata (a copy of ``test/server`` and the files around it) is dated by what its
harness has: each feature below first shipped in the release named (read from the wheels on PyPI,
0.5.6 to 0.5.23); the newest feature present gives the lowest release it can be, which is the one
whose rules (``semantics``) are applied.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from ..errors import DiffperfError

VERSION_LINE = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?['"]([^'"]+)['"]""", re.M)
METADATA_VERSION = re.compile(r"^Version:\s*(\S+)", re.M)
# (first release, file below the sglang folder, text it holds or "" for the file alone), newest first.
FEATURES: tuple[tuple[str, str, str], ...] = (
    ("0.5.23", "multimodal_gen/test/server/testcase_configs.py", "lead_sampling_params"),
    ("0.5.22", "multimodal_gen/test/server/testcase_configs.py", "pin_consistency_quality"),
    ("0.5.21", "multimodal_gen/test/server/testcase_configs.py", "perf_warmup_requests"),
    ("0.5.20", "multimodal_gen/test/server/test_server_common.py", "request_index"),
    ("0.5.19", "multimodal_gen/test/server/testcase_configs.py", "perf_repeat_requests"),
    ("0.5.18", "multimodal_gen/test/server/test_server_utils.py", "--uvicorn-access-log-exclude-prefixes"),
    ("0.5.17", "multimodal_gen/test/server/gpu_cases.py", "FOUR_GPU_H100_CASES"),
    ("0.5.16", "multimodal_gen/test/server/testcase_configs.py", "PERF_BASELINE_FILE_BY_PLATFORM"),
    ("0.5.13", "multimodal_gen/test/server/testcase_configs.py", "realtime_num_chunks"),
    ("0.5.12", "multimodal_gen/test/server/testcase_configs.py", "run_component_accuracy_check"),
    ("0.5.11", "multimodal_gen/test/server/testcase_configs.py", "run_consistency_check"),
    ("0.5.10", "multimodal_gen/test/server/testcase_configs.py", "run_perf_check"),
    ("0.5.9", "multimodal_gen/test/server/testcase_configs.py", "dit_offload_prefetch_size"),
    ("0.5.8", "multimodal_gen/test/server/testcase_configs.py", "enable_cache_dit"),
    ("0.5.7", "multimodal_gen/test/server/testcase_configs.py", "num_outputs_per_prompt"),
    ("0.5.6", "multimodal_gen/test/server/testcase_configs.py", ""),
)
OLDEST = FEATURES[-1][0]


@dataclass(frozen=True)
class Release:
    """A release (``version``) and how it was found (``how``: where the number was read)."""

    version: Version
    how: str

    def __str__(self) -> str:
        return f"{self.version} ({self.how})"


def parse(text: str, source: str = "--diffperf-sglang-semantics") -> Version:
    """A release number as written (``0.5.23``, ``v0.5.12``); DiffperfError naming ``source`` otherwise."""
    try:
        return Version(text.strip().removeprefix("v"))
    except InvalidVersion:
        raise DiffperfError(f"not an SGLang release number: {text!r} (expected e.g. 0.5.23)", source=source) from None


def identify(root: Path, *, installed: bool = False) -> Release:
    """The release of the sglang tree under ``root`` (the folder that holds ``sglang/``)."""
    if installed:
        try:
            return Release(Version(importlib.metadata.version("sglang")), "installed package metadata")
        except (importlib.metadata.PackageNotFoundError, InvalidVersion):
            pass
    for metadata in sorted(root.glob("sglang-*.dist-info/METADATA")):
        found = METADATA_VERSION.search(metadata.read_text(encoding="utf-8", errors="replace"))
        if found:
            return Release(_version(found.group(1), metadata), f"wheel metadata {metadata.parent.name}")
    for name in ("_version.py", "version.py"):
        file = root / "sglang" / name
        found = VERSION_LINE.search(file.read_text(encoding="utf-8")) if file.is_file() else None
        if found:
            return Release(_version(found.group(1), file), f"sglang/{name}")
    package = root / "sglang"
    for first, rel, text in FEATURES:
        file = package / rel
        if file.is_file() and (not text or text in file.read_text(encoding="utf-8")):
            hint = f"has {text}" if text else f"has {Path(rel).name}"
            return Release(Version(first), f"its harness {hint}: {first} or later")
    return Release(Version(OLDEST), "no version found: read as the oldest release with the harness")


def _version(text: str, where: Path) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise DiffperfError(f"cannot read the release number {text!r}", source=str(where)) from None
