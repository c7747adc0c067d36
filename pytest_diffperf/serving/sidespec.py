"""The ``--diffperf-base`` / ``--diffperf-candidate`` SPEC: how one side of an A/B run is served.

A SPEC is ``current`` (this environment, the case as it is) or items separated by ``;``, each
``KEY=VALUE`` (spaces around items are ignored)::

    python=/opt/base-venv/bin/python      the side's Python: its own installed server (and plugin)
    program=/opt/base/bin/sglang          the server program itself, as shell words
    pythonpath=/src/base-checkout         put a checkout first on PYTHONPATH (repeatable)
    env=NAME=VALUE                        an extra environment variable (repeatable)
    args=--inject-delay DenoisingStage=50 serve args appended to the case's (shell words; repeatable)
    git=origin/main:python                a revision of a repository, checked out into a worktree of its own,
                                          its SUBDIR (after the first ``:``) served through ``pythonpath=``
    repo=/src/sglang                      the repository of ``git=`` (default: the one the tests run from)
    install / install=PIP-ARGS            ``git=``'s SUBDIR ``pip install``-ed into a venv cached by commit
    cache=DIR                             keep ``git=``'s checkouts and venvs in DIR, keyed by commit

``python`` and ``program`` exclude each other and ``git``+``install``; ``repo``, ``install`` and
``cache`` need ``git``. Pure: parsing only; :mod:`.gitside` builds a ``git=`` side, :mod:`.ab` applies a SPEC.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from ..errors import DiffperfError

Key = Literal["python", "program", "pythonpath", "env", "args", "git", "repo", "install", "cache"]
KEYS: tuple[Key, ...] = ("python", "program", "pythonpath", "env", "args", "git", "repo", "install", "cache")
GIT_ONLY: tuple[Key, ...] = ("repo", "install", "cache")  # items that qualify git=
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
    git: GitSource | None = None

    @property
    def is_current(self) -> bool:
        return not (self.python or self.program or self.pythonpath or self.env or self.args or self.git)


@dataclass(frozen=True)
class GitSource:
    """``git=REV[:SUBDIR]`` with its ``repo=``, ``install`` and ``cache=`` items, as given (nothing resolved)."""

    rev: str
    subdir: str = ""
    repo: str | None = None  # None: the repository the tests run from
    install: tuple[str, ...] | None = None  # None: served through pythonpath=; else pip's extra arguments
    cache: str | None = None  # None: a worktree under the run's temp folder, removed at the end


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
    git: dict[str, str] = {}
    for item in (part.strip() for part in stripped.split(";")):
        if not item:
            continue
        if item == CURRENT:
            raise DiffperfError(f"{CURRENT!r} stands alone: it cannot be combined with other items", source=source)
        key, sep, value = (part.strip() for part in item.partition("="))
        if key == "install" and not sep:
            key, sep, value = "install", "=", " "  # a bare ``install``: pip's defaults
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
        elif key in ("git", *GIT_ONLY):
            if key in git:
                raise DiffperfError(f"{key}= given twice", source=source, key=key)
            git[key] = value
        else:
            args += _words(value, source, key)
    source_of_git = _git_source(git, python is not None or bool(program), source)
    return SideSpec(stripped, python, program, tuple(pythonpath), tuple(env.items()), tuple(args), source_of_git)


def _git_source(items: dict[str, str], has_program: bool, source: str) -> GitSource | None:
    if "git" not in items:
        for key in GIT_ONLY:
            if key in items:
                raise DiffperfError(f"{key}= qualifies git=REV[:SUBDIR]: add git=", source=source, key=key)
        return None
    rev, _, subdir = items["git"].partition(":")
    if not rev.strip():
        raise DiffperfError(
            "expected git=REV[:SUBDIR] with a revision, got nothing before ':'", source=source, key="git"
        )
    subdir = subdir.strip()
    if subdir.startswith("/") or ".." in subdir.split("/"):
        raise DiffperfError(f"SUBDIR must be a folder inside the repository, got {subdir!r}", source=source, key="git")
    install = tuple(_words(items["install"], source, "install")) if "install" in items else None
    if install is not None and has_program:
        raise DiffperfError(
            "install serves git=REV from its own venv: drop python= / program=", source=source, key="install"
        )
    return GitSource(rev.strip(), subdir.strip("/"), items.get("repo"), install, items.get("cache"))


def _twice(key: str, *exclusive: str) -> str:
    return f"{key}= given twice, or with {' / '.join(k for k in exclusive if k != key)}=: give one server program"


def _words(value: str, source: str, key: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise DiffperfError(f"cannot split {value!r} into shell words: {exc}", source=source, key=key) from None
