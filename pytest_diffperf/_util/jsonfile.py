"""Reading JSON files with clear errors: syntax, duplicate keys, and schema (pydantic) problems.

Every problem becomes one ``DiffperfError`` naming the file, the JSON path and what was expected.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import DiffperfError

# Models of our JSON files: unknown keys kept, types exact, numbers finite.
STRICT = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)


def parse_json(path: Path) -> tuple[Any, list[str]]:
    """Parse a JSON file; return the data and the JSON paths of duplicated object keys."""
    try:
        kind = path.stat().st_mode
    except FileNotFoundError:
        raise DiffperfError("file not found", source=str(path)) from None
    except OSError as exc:  # a symlink loop, a name too long, a folder that cannot be searched
        raise DiffperfError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    if stat.S_ISDIR(kind):
        raise DiffperfError("expected a JSON file, got a folder", source=str(path))
    if not stat.S_ISREG(kind):  # a FIFO or a device: reading it would wait for a writer, or forever
        raise DiffperfError("expected a JSON file, got a FIFO, socket or device", source=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DiffperfError("file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DiffperfError(f"cannot read: {exc}", source=str(path)) from None
    return parse_json_text(text, path)


def parse_json_text(text: str, path: Path) -> tuple[Any, list[str]]:
    """``parse_json`` of text already read (``path`` names it in errors)."""
    dups: dict[int, list[str]] = {}
    alive: list[dict[str, Any]] = []  # keeps every object alive, so ids stay unique

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        alive.append(obj)
        for key, value in pairs:
            if key in obj:
                dups.setdefault(id(obj), []).append(key)
            obj[key] = value
        return obj

    try:
        data = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise DiffperfError(
            f"invalid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", source=str(path)
        ) from None
    except RecursionError:
        raise DiffperfError("invalid JSON: nested too deeply", source=str(path)) from None
    except ValueError as exc:  # an integer too long to convert
        raise DiffperfError(f"invalid JSON: {exc}", source=str(path)) from None
    return data, _locate(data, dups, "") if dups else []


def _locate(node: Any, dups: dict[int, list[str]], where: str) -> list[str]:
    """JSON paths of the duplicated keys recorded in ``dups`` (by object id) under ``node``."""
    children: Iterable[tuple[object, Any]]
    if isinstance(node, dict):
        found = [json_path(where, key) for key in dups.get(id(node), [])]
        children = node.items()
    elif isinstance(node, list):
        found, children = [], enumerate(node)
    else:
        return []
    for key, child in children:
        found += _locate(child, dups, json_path(where, str(key)))
    return found


def read_json_object(path: Path) -> dict[str, Any]:
    """Parse a JSON file that must be an object without duplicate keys; DiffperfError otherwise."""
    return json_object(*parse_json(path), path)


def json_object(data: Any, dups: list[str], path: Path) -> dict[str, Any]:
    """Parsed JSON that must be an object without duplicate keys; DiffperfError otherwise."""
    if dups:
        raise DiffperfError("duplicate key (JSON keeps only the last one)", source=str(path), key=dups[0])
    if not isinstance(data, dict):
        raise DiffperfError(f"expected a JSON object at the top level, got {describe_type(data)}", source=str(path))
    return data


def json_path(prefix: str, key: str) -> str:
    """``prefix.key``, or ``key`` at the top level."""
    return f"{prefix}.{key}" if prefix else key


def describe_type(value: Any) -> str:
    """How a JSON value is named in a message: "an object", "a list", or its repr."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), repr(value))


def describe_errors(exc: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    """Pydantic errors as (JSON path, message) pairs, the message saying what was expected."""
    out = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        is_key = loc[-1:] == ["[key]"]
        path = ".".join(([prefix] if prefix else []) + (loc[:-1] if is_key else loc))
        if err["type"] == "missing":
            message = "required key is missing"
        elif err["type"] == "extra_forbidden":
            message = "unknown key"
        elif err["type"] == "value_error":
            message = err["msg"].removeprefix("Value error, ")
        elif is_key:
            message = f"expected a step index (a non-negative integer), got key {err['input']!r}"
        else:
            expected = err["msg"].removeprefix("Input should be ")
            if err["type"] in ("dict_type", "model_type"):
                expected = "an object"
            elif err["type"] in ("greater_than_equal", "less_than_equal"):
                expected = f"a number {expected}"
            message = f"expected {expected}, got {_shown(err['input'])}"
        out.append((path, message))
    return out


def _shown(value: Any) -> str:
    text = describe_type(value) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


M = TypeVar("M", bound=BaseModel)


def validate(model: type[M], data: Any, source: Path, prefix: str) -> M:
    """``model.model_validate(data)``, raising one DiffperfError naming file and key."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = describe_errors(exc, prefix)
        key, message = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise DiffperfError(message + more, source=str(source), key=key) from None
