"""The reference server's video quality against SGLang's own ``adjust_output_quality`` of each release."""

from __future__ import annotations

import ast
import enum
from pathlib import Path
from typing import Any

import pytest

from pytest_diffperf.refserver.media import video_compression

RELEASES = ["v0.5.12", "v0.5.17", "v0.5.23"]
UTILS = "src/sglang/multimodal_gen/runtime/entrypoints/openai/utils.py"


class DataType(enum.Enum):  # SGLang's enum, as far as adjust_output_quality reads it
    IMAGE = "image"
    VIDEO = "video"


def sglangs_adjust_output_quality(path: Path) -> Any:
    """The release's ``adjust_output_quality`` and ``OUTPUT_QUALITY_MAPPER``, run from its source."""
    tree = ast.parse(path.read_text())
    wanted: list[ast.stmt] = [
        node
        for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name == "adjust_output_quality")
        or (
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == "OUTPUT_QUALITY_MAPPER" for t in node.targets)
        )
    ]
    assert len(wanted) == 2, path
    namespace: dict[str, Any] = {"DataType": DataType}
    exec(compile(ast.Module(wanted, []), str(path), "exec"), namespace)
    return namespace["adjust_output_quality"]


@pytest.mark.parametrize("release", RELEASES)
def test_video_compression_is_sglangs(sglang_data, release):
    adjust = sglangs_adjust_output_quality(sglang_data / release / UTILS)
    for quality in ("default", "maximum", "high", "medium", "low"):
        assert video_compression(quality, None) == adjust(quality, DataType.VIDEO), (release, quality)
    assert video_compression("low", 100) == 100  # an explicit compression wins, as SGLang resolves it
    assert video_compression(None, None) == adjust("default", DataType.VIDEO)  # no quality: SGLang's quality 5


def test_an_unknown_quality_is_refused_as_sglang_0_5_23_refuses_it(sglang_data):
    """0.5.23 raises; 0.5.12 and 0.5.17 return None and leave the compression as it was. The server follows 0.5.23."""
    adjust = sglangs_adjust_output_quality(sglang_data / "v0.5.23" / UTILS)
    with pytest.raises(ValueError) as sglangs:
        adjust("best", DataType.VIDEO)
    with pytest.raises(ValueError) as ours:
        video_compression("best", None)
    assert str(ours.value) == str(sglangs.value)
    assert sglangs_adjust_output_quality(sglang_data / "v0.5.12" / UTILS)("best", DataType.VIDEO) is None
