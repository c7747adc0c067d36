"""Model path -> SGLang task type (T2I, TI2V, ...), from a checked-in table instead of the model hub.

SGLang's registry reads a model's ``model_index.json`` from the hub to find its pipeline, whose task
type decides a case's modality (image or video request) and its default sampling parameters. The
table ``task_types.json`` next to this file holds that answer for every model in SGLang's case
lists; a file named by ``$DIFFPERF_SGLANG_TASK_TYPES`` (same shape) adds or overrides entries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .._util.jsonfile import read_json_object, validate
from ..errors import DiffperfError

TABLE_PATH = Path(__file__).with_name("task_types.json")
TABLE_ENV = "DIFFPERF_SGLANG_TASK_TYPES"
TaskType = Literal["T2I", "I2I", "TI2I", "T2V", "I2V", "TI2V", "I2M", "VLA_ACTION", "V2V", "F2V"]


class TableFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    comment: str = Field("", alias="_comment")
    models: dict[str, TaskType] = Field(default_factory=dict)
    pipelines: dict[str, TaskType] = Field(default_factory=dict)


@dataclass(frozen=True)
class TaskTypeTable:
    """Model ids (``org/name``) and pipeline class names to task types; ``sources`` are the files read."""

    models: dict[str, TaskType] = field(default_factory=dict)
    pipelines: dict[str, TaskType] = field(default_factory=dict)
    sources: tuple[Path, ...] = ()

    def task_type(self, model_path: str) -> TaskType:
        """The task type of a model id, or of a local path ending in a known ``org/name``; DiffperfError if unknown."""
        if model_path in self.models:
            return self.models[model_path]
        parts = Path(model_path).parts
        if len(parts) >= 2 and "/".join(parts[-2:]) in self.models:
            return self.models["/".join(parts[-2:])]
        raise DiffperfError(
            f"no task type is known for model {model_path!r}: SGLang's registry reads it from the model hub, "
            f'which pytest-diffperf does not use. Add the model under "models" in a JSON file '
            f'({{"models": {{"{model_path}": "T2V"}}}}, one of {", ".join(TaskType.__args__)}) '  # type: ignore[attr-defined]
            f"and point ${TABLE_ENV} at it, or add it to {TABLE_PATH}",
            source=" + ".join(str(p) for p in self.sources) or None,
            key=f"models.{model_path}",
        )

    def pipeline_task_type(self, pipeline_class_name: str) -> TaskType | None:
        """The task type of a ``--pipeline-class-name``; None: SGLang falls back to the model's."""
        return self.pipelines.get(pipeline_class_name)


def load_table(extra: Path | None = None) -> TaskTypeTable:
    """The checked-in table, then ``extra`` (default ``$DIFFPERF_SGLANG_TASK_TYPES``) over it."""
    extra = extra or (Path(os.environ[TABLE_ENV]) if os.environ.get(TABLE_ENV) else None)
    models: dict[str, TaskType] = {}
    pipelines: dict[str, TaskType] = {}
    sources = []
    for path in (TABLE_PATH, extra):
        if path is None:
            continue
        parsed = validate(TableFile, read_json_object(path), path, "")
        models.update(parsed.models)
        pipelines.update(parsed.pipelines)
        sources.append(path)
    return TaskTypeTable(models, pipelines, tuple(sources))
