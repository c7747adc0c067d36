"""Lint findings: one problem found in a file, and the checks every JSON file kind shares."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..errors import DiffperfError
from .jsonfile import describe_errors, describe_type, parse_json

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    severity: Severity
    file: str
    scenario: str  # the scenario, case or entry the finding is about ("" for the file)
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.scenario or '-'}:{self.key or '-'}: {self.severity}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def read_for_lint(path: Path) -> tuple[dict[str, Any] | None, list[Finding]]:
    """The file's top-level object (None when there is none) and its syntax and duplicate-key findings."""
    try:
        data, dups = parse_json(path)
    except DiffperfError as exc:
        return None, [Finding("error", str(path), "", "", bare(exc))]
    out = [Finding("error", str(path), "", key, "duplicate key (JSON keeps only the last one)") for key in dups]
    if not isinstance(data, dict):
        message = f"expected a JSON object at the top level, got {describe_type(data)}"
        return None, [*out, Finding("error", str(path), "", "", message)]
    return data, out


def schema_problems(model: type[BaseModel], data: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Every (JSON path, message) pydantic finds when validating ``data`` as ``model``."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return describe_errors(exc, prefix)
    return []


def bare(exc: DiffperfError) -> str:
    """The message of ``exc`` without its ``source: key:`` prefix."""
    where = ": ".join(p for p in (exc.source, exc.key) if p)
    return str(exc).removeprefix(f"{where}: ") if where else str(exc)
