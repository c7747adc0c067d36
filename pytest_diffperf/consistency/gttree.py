"""A ground-truth tree: a local folder, or a remote one fetched into a cache keyed by repository and revision.

Cache: ``$DIFFPERF_GT_CACHE`` (default ``$XDG_CACHE_HOME/pytest-diffperf/gt``), then ``<owner>/<repo>/<revision>/
<path>/`` for a GitHub source, ``url/<sha256 of the URL>/`` for a URL. It mirrors the remote folder, records
every fetched file's sha256 in its ``manifest.json`` (the check verifies it) and remembers each case's lookup
in ``.lookups.json``, so a second run of a commit revision reads the cache alone (offline too). A revision
that is not a commit (a branch, a tag) is fetched anew each run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .._util.atomicfile import locked, write_atomic
from .._util.values import BadValue, seconds_or_zero
from ..errors import DiffperfError
from . import manifest
from .remote import DEFAULT_BACKOFF_S, Fetcher
from .sglangrules import CASE_MAP

CACHE_ENV = "DIFFPERF_GT_CACHE"
RAW_BASE_ENV = "DIFFPERF_GT_RAW_BASE"  # raw.githubusercontent.com's stand-in (a mirror, or a test server)
RAW_BASE = "https://raw.githubusercontent.com"
BACKOFF_ENV = "DIFFPERF_GT_BACKOFF_S"  # the first retry's wait (doubling after), default 0.5
LOOKUPS = ".lookups.json"
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def cache_root(env: Mapping[str, str]) -> Path:
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser().absolute()
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-diffperf" / "gt"


@dataclass(frozen=True)
class GTTree:
    """Files below ``root`` (the folder itself, or the remote folder's cache); ``fetcher`` when remote."""

    root: Path
    label: str
    fetcher: Fetcher | None = None
    revision: str | None = None
    _case_maps: dict[str, dict[str, frozenset[str]]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def immutable(self) -> bool:
        """Whether what was fetched stays true: a commit revision (a local folder is read as it is now)."""
        return self.fetcher is None or bool(self.revision and COMMIT.match(self.revision))

    def where(self, rel: str) -> str:
        """A file's URL (remote) or path (local), for messages."""
        return self.fetcher.url(rel) if self.fetcher is not None else str(self.root / rel)

    def file(self, rel: str, case_id: str) -> Path | None:
        """The file's local path (fetched into the cache when remote); None when the tree does not hold it."""
        path = self.root / rel
        if self.fetcher is None:
            return path if path.is_file() else None
        if self.immutable and path.is_file() and self._verified(path):
            return path
        data = self.fetcher.get(rel, case_id)
        if data is None:
            return None
        write_atomic(path, data)
        manifest.record(self.root, {path: data})
        return path

    def _verified(self, path: Path) -> bool:
        recorded = manifest.load(self.root)
        return recorded is not None and not manifest.integrity_problem(
            self.root, recorded, path, manifest.sha256(path.read_bytes())
        )

    def remembered(self, key: str) -> list[str] | None:
        """The files a lookup found before (a commit revision's cache only)."""
        if self.fetcher is None or not self.immutable:
            return None
        found = self._lookups().get(key)
        return found if isinstance(found, list) and all(isinstance(r, str) for r in found) else None

    def remember(self, key: str, rels: list[str]) -> None:
        if self.fetcher is None:
            return
        with locked(self.root / LOOKUPS):
            lookups = self._lookups()
            lookups[key] = rels
            write_atomic(self.root / LOOKUPS, json.dumps(lookups, indent=1, sort_keys=True) + "\n")

    def _lookups(self) -> dict[str, object]:
        try:
            data = json.loads((self.root / LOOKUPS).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def case_map(self, case_id: str) -> dict[str, frozenset[str]]:
        """``official_generated/case_map.json``: case id -> the official files it declares ({} when absent or
        unreadable, as SGLang reads it)."""
        if "map" not in self._case_maps:
            path = self.file(CASE_MAP, case_id)
            self._case_maps["map"] = _parse_case_map(path) if path is not None else {}
        return self._case_maps["map"]


def _parse_case_map(path: Path) -> dict[str, frozenset[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    cases = data.get("cases", {}) if isinstance(data, dict) else {}
    out: dict[str, frozenset[str]] = {}
    for case_id, meta in cases.items() if isinstance(cases, dict) else ():
        outputs = meta.get("outputs", []) if isinstance(meta, dict) else []
        if isinstance(outputs, list):
            out[str(case_id)] = frozenset(str(o) for o in outputs)
    return out


def local_tree(folder: Path) -> GTTree:
    return GTTree(folder, str(folder))


def github_tree(repo: str, revision: str, path: str, env: Mapping[str, str]) -> GTTree:
    """The tree of ``repo`` at ``revision`` below ``path``, cached per repository and revision."""
    base = (env.get(RAW_BASE_ENV) or RAW_BASE).rstrip("/")
    root = cache_root(env).joinpath(*repo.split("/"), revision, *path.split("/"))
    fetcher = Fetcher(f"{base}/{repo}/{revision}/{path}", backoff_s=_backoff(env))
    return GTTree(root, f"github:{repo}@{revision}:{path}", fetcher, revision)


def url_tree(url: str, env: Mapping[str, str]) -> GTTree:
    """The tree at ``url``; its revision is unknown, so it is fetched anew each run (cached as a fallback key)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return GTTree(cache_root(env) / "url" / digest, url, Fetcher(url, backoff_s=_backoff(env)))


def _backoff(env: Mapping[str, str]) -> float:
    """``DIFFPERF_GT_BACKOFF_S``; DiffperfError naming it when it is not a number of seconds."""
    text = env.get(BACKOFF_ENV, "")
    if not text:
        return DEFAULT_BACKOFF_S
    try:
        return seconds_or_zero(text)
    except BadValue as exc:
        raise DiffperfError(str(exc), source=BACKOFF_ENV) from None
