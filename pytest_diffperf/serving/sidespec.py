"""The ``--diffperf-base`` / ``--diffperf-candidate`` SPEC: how one side of an A/B run is served.

A SPEC is ``current`` (this environment, the case as it is) or items separated by ``;``, each
``KEY=VALUE`` (spaces around items are ignored)::

    python=/opt/base-venv/bin/python      the side's Python: its own installed server (and plugin)
    program=/opt/base/bin/sglang          the server program itself, as shell words
    pythonpath=/src/base-checkout         put a checkout first on PYTHONPATH (repeatable)
    env=NAME=VALUE                        an extra environment variable (repeatable)
    args=--inject-delay DenoisingStage=50 serve args appended to the case's (shell words; repeatable)

``python`` and ``program`` exclude each other. Pure: parsing only; :mod:`.ab` applies a SPEC.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from ..errors import DiffperfError

Key = Literal["python", "program", "pythonpath", "env", "args"]
KEYS: tuple[Key, ...] = ("python", "program", "pythonpath", "env", "args")
CURRENT = "current"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class SideSpec:
    """One side of an A/B run; the empty spec (``current``) changes nothing."""

    text: str = CURRENT
    python: str | None = None
    program: tuple[str, ...] = ()
    pythonpath: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    args: tuple[str, ...] = ()

    @property
    def is_current(self) -> bool:
        return not (self.python or self.program or self.pythonpath or self.env or self.args)


def parse_side_spec(text: str, source: str) -> SideSpec:
    """Parse a SPEC (see the module docstring); one ``DiffperfError`` per mistake, ``key`` naming the item."""
    stripped = text.strip()
    if not stripped.strip("; "):
        raise DiffperfError(
            f"expected {CURRENT!r} or KEY=VALUE items separated by ';', got an empty SPEC", source=source
        )
    if stripped == CURRENT:
        return SideSpec(stripped)
    python: str | None = None
    program: tuple[str, ...] = ()
    pythonpath: list[str] = []
    env: dict[str, str] = {}
    args: list[str] = []
    for item in (part.strip() for part in stripped.split(";")):
        if not item:
            continue
        if item == CURRENT:
            raise DiffperfError(f"{CURRENT!r} stands alone: it cannot be combined with other items", source=source)
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep:
            raise DiffperfError(f"expected KEY=VALUE, got {item!r} (keys: {', '.join(KEYS)})", source=source)
        if key not in KEYS:
            raise DiffperfError(f"unknown key {key!r}; expected one of {', '.join(KEYS)}", source=source, key=key)
        if not value:
            raise DiffperfError(f"{key}= needs a value", source=source, key=key)
        if key == "python":
            if python is not None or program:
                raise DiffperfError(_twice(key, "python", "program"), source=source, key=key)
            python = value
        elif key == "program":
            if python is not None or program:
                raise DiffperfError(_twice(key, "python", "program"), source=source, key=key)
            program = tuple(_words(value, source, key))
        elif key == "pythonpath":
            pythonpath.append(value)
        elif key == "env":
            name, eq, env_value = value.partition("=")
            if not eq or not ENV_NAME.match(name) or "\0" in env_value:
                raise DiffperfError(
                    f"expected env=NAME=VALUE with NAME a variable name, got {value!r}", source=source, key=key
                )
            if name == "PYTHONPATH":
                raise DiffperfError(
                    "set PYTHONPATH with pythonpath=DIR (it is prepended, not replaced)", source=source, key=key
                )
            env[name] = env_value
        else:
            args += _words(value, source, key)
    return SideSpec(stripped, python, program, tuple(pythonpath), tuple(env.items()), tuple(args))


def _twice(key: str, *exclusive: str) -> str:
    return f"{key}= given twice, or with {' / '.join(k for k in exclusive if k != key)}=: give one server program"


def _words(value: str, source: str, key: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise DiffperfError(f"cannot split {value!r} into shell words: {exc}", source=source, key=key) from None
