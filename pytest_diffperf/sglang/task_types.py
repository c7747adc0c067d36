"""Model path -> SGLang task type (T2I, TI2V, ...), from a checked-in table instead of the model hub.

SGLang's registry reads a model's ``model_index.json`` from the hub to find its pipeline, whose task
type decides a case's modality (image or video request) and its default sampling parameters. The
table ``task_types.json`` next to this file holds that answer for every model in SGLang's case
lists; a file named by ``$DIFFPERF_SGLANG_TASK_TYPES`` (same shape) adds or overrides entries.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from .._util.jsonfile import read_json_object, validate
from ..errors import DiffperfError

TABLE_PATH = Path(__file__).with_name("task_types.json")
TABLE_ENV = "DIFFPERF_SGLANG_TASK_TYPES"
TaskType = Literal["T2I", "I2I", "TI2I", "T2V", "I2V", "TI2V", "I2M", "VLA_ACTION", "V2V", "F2V"]
TASK_TYPES: tuple[TaskType, ...] = get_args(TaskType)


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

    def lookup(self, model_path: str) -> TaskType | None:
        """The task type of a model id, or of a local path ending in a known ``org/name``; None if unknown."""
        if model_path in self.models:
            return self.models[model_path]
        parts = Path(model_path).parts
        if len(parts) >= 2 and "/".join(parts[-2:]) in self.models:
            return self.models["/".join(parts[-2:])]
        return None

    def task_type(self, model_path: str) -> TaskType:
        """``lookup``'s answer; DiffperfError naming the model and how to add it if unknown."""
        found = self.lookup(model_path)
        if found is None:
            raise DiffperfError(
                f"no task type is known for model {model_path!r}: {how_to_add(model_path)}",
                source=" + ".join(str(p) for p in self.sources) or None,
                key=f"models.{model_path}",
            )
        return found

    def with_models(self, models: Mapping[str, TaskType]) -> TaskTypeTable:
        """This table with ``models`` added (inferred task types)."""
        return TaskTypeTable({**self.models, **models}, self.pipelines, self.sources)

    def pipeline_task_type(self, pipeline_class_name: str) -> TaskType | None:
        """The task type of a ``--pipeline-class-name``; None: SGLang falls back to the model's."""
        return self.pipelines.get(pipeline_class_name)


def how_to_add(model_path: str) -> str:
    """How a user gives a model's task type (a JSON file named by ``$DIFFPERF_SGLANG_TASK_TYPES``)."""
    return (
        "SGLang's registry reads it from the model hub, which pytest-diffperf does not use. Write a JSON file "
        f'{{"models": {{"{model_path}": "T2V"}}}} (one of {", ".join(TASK_TYPES)}) and point ${TABLE_ENV} at it '
        f"(diffperf import-cases: --task-types FILE)"
    )


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
