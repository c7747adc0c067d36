"""Case definitions: a superset of SGLang's nightly ``comparison_configs.json``.

One file drives both the pytest scenarios and ``diffperf compare``. SGLang's keys are read as
they are; the test-only keys (``run_perf_check``, ``perf_repeat_requests``, ...) are ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
)

from .errors import DiffperfError
from ._util.jsonfile import read_json_object, validate

VIDEO_TASKS = ("text-to-video", "image-to-video", "text-image-to-video")
Task = Literal["text-to-image", "image-edit", "text-to-video", "image-to-video", "text-image-to-video"]


class FrameworkEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    serve_args: str = ""
    extra_env: dict[str, str] = Field(default_factory=dict)


class Case(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    model: str
    task: Task
    prompt: str
    width: PositiveInt | None = None
    height: PositiveInt | None = None
    num_frames: PositiveInt | None = None
    fps: PositiveInt | None = None
    num_inference_steps: PositiveInt | None = None
    guidance_scale: float | None = None
    negative_prompt: str | None = None
    seed: int | None = None
    num_gpus: PositiveInt = 1
    output_format: Literal["png", "jpeg", "jpg"] | None = None
    reference_image: bool | str | None = None
    sglang_request_extra: dict[str, Any] = Field(default_factory=dict)
    frameworks: dict[str, FrameworkEntry] = Field(default_factory=dict)
    # pytest-diffperf's own keys
    run_perf_check: bool = True
    run_consistency_check: bool = True
    perf_repeat_requests: PositiveInt = 1
    perf_warmup_requests: NonNegativeInt = 0
    timeout_s: PositiveFloat | None = None

    @property
    def is_video(self) -> bool:
        return self.task in VIDEO_TASKS

    def framework(self, launcher: str) -> FrameworkEntry:
        """The serve args and env for ``launcher``, falling back to the ``sglang`` entry."""
        return self.frameworks.get(launcher) or self.frameworks.get("sglang") or FrameworkEntry()


class CaseFile(BaseModel):
    model_config = ConfigDict(extra="allow")

    measurement_repeats: PositiveInt = 3
    cases: list[Case]


def load_case_file(path: Path) -> CaseFile:
    """Read and validate a case file (case ids must be unique)."""
    parsed = validate(CaseFile, read_json_object(path), path, "")
    seen: set[str] = set()
    for index, case in enumerate(parsed.cases):
        if case.id in seen:
            raise DiffperfError(f"duplicate case id {case.id!r}", source=str(path), key=f"cases.{index}.id")
        seen.add(case.id)
    return parsed


def load_cases(path: Path) -> dict[str, Case]:
    """Read and validate a case file; returns cases by id, in file order."""
    return {case.id: case for case in load_case_file(path).cases}
