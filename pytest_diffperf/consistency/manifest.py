"""``manifest.json`` in a GT folder: the sha256 of every GT file, updated under a file lock beside it
(``.manifest.json.lock``, git-ignored as every ``.*.lock``; never in a shared temp folder).

Keys are paths relative to the GT folder, with ``/`` (``cpu/case_1gpu.png``). A folder without a
manifest is read unverified (SGLang's GT folders have none); in a folder with one, a GT file must
be listed and match its hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from .._util.atomicfile import locked, write_atomic
from .._util.jsonfile import read_json_object, validate
from ..errors import DiffperfError
from ..protocol import IMAGE_FORMAT_EXTS

MANIFEST = "manifest.json"
# GT files: images by format name (.jpeg as well as .jpg), and a video's sound track (SGLang's _audio.wav)
GT_SUFFIXES = (*(f".{fmt}" for fmt in IMAGE_FORMAT_EXTS), ".wav")
RECORD_COMMAND = "python -m pytest_diffperf.consistency record {gt_dir}"


class Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: NonNegativeInt


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = 1
    files: dict[str, Entry] = Field(default_factory=dict)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load(gt_dir: Path) -> Manifest | None:
    """The folder's manifest, None if it has none; DiffperfError if it is not a valid one."""
    path = gt_dir / MANIFEST
    if not (path.exists() or path.is_symlink()):
        return None
    if not path.is_file():  # a folder or a broken link there would turn the integrity check off without a word
        raise DiffperfError("is not a file; expected the ground-truth manifest (a JSON file)", source=str(path))
    return validate(Manifest, read_json_object(path), path, "")


def record(gt_dir: Path, files: dict[Path, bytes]) -> None:
    """Add or update the hashes of ``files`` (paths inside ``gt_dir``); safe across processes."""
    with locked(gt_dir / MANIFEST):
        manifest = load(gt_dir) or Manifest()
        for path, data in files.items():
            manifest.files[_key(gt_dir, path)] = Entry(sha256=sha256(data), bytes=len(data))
        _write(gt_dir, manifest)


def rebuild(gt_dir: Path) -> Manifest:
    """Record every GT image and sound track under ``gt_dir`` afresh (for GT files changed or added by hand)."""
    with locked(gt_dir / MANIFEST):
        manifest = Manifest()
        for path in sorted(gt_dir.rglob("*")):
            if path.suffix.lower() in GT_SUFFIXES and not any(
                p.startswith(".") for p in path.relative_to(gt_dir).parts
            ):
                data = path.read_bytes()
                manifest.files[_key(gt_dir, path)] = Entry(sha256=sha256(data), bytes=len(data))
        _write(gt_dir, manifest)
    return manifest


def integrity_problem(gt_dir: Path, manifest: Manifest, path: Path, actual: str) -> str | None:
    """Why ``path`` (whose content has sha256 ``actual``) fails the manifest, or None if it matches."""
    entry = manifest.files.get(_key(gt_dir, path))
    if entry is None:
        return f"{path} is not listed in {gt_dir / MANIFEST}"
    if actual != entry.sha256:
        return f"{path} has sha256 {actual}, but {gt_dir / MANIFEST} records {entry.sha256}"
    return None


def _key(gt_dir: Path, path: Path) -> str:
    return path.resolve().relative_to(gt_dir.resolve()).as_posix()


def _write(gt_dir: Path, manifest: Manifest) -> None:
    doc = manifest.model_dump()
    doc["files"] = dict(sorted(doc["files"].items()))
    write_atomic(gt_dir / MANIFEST, (json.dumps(doc, indent=2) + "\n").encode())
