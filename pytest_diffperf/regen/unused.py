"""What no case uses any more, and pruning it (as syrupy reports unused snapshots and deletes them on request).

Unused: a baseline scenario of the platform that no case defines, a consistency-thresholds entry for
a case that does not exist, and a ground-truth file (``<case>_<n>gpu[_frame_<label>].<ext>``, at the
top of the folder or in the platform's subfolder) of a case that does not exist or compares no output.
``prune`` removes them: each JSON file edited in its text (every other byte kept) under its lock,
atomically; a ground-truth file deleted with its manifest entry.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .._util import atomicfile
from .._util.jsonfile import json_object, parse_json_text, validate
from ..cases import Case
from ..consistency.manifest import GT_SUFFIXES, MANIFEST, Manifest
from ..consistency.thresholds import ThresholdFile, ThresholdSet
from ..errors import DiffperfError
from ..perf.baselines import BaselineSet, check_baseline_doc, select_scenarios
from ..platforms import Platform
from .jsonedit import remove_member

Kind = Literal["scenario", "thresholds", "ground truth"]
GT_NAME = re.compile(r"^(?P<case>.+)_\d+gpu(?:_frame_[^.]+)?\.\w+$")


@dataclass(frozen=True)
class Unused:
    kind: Kind
    file: Path  # the baseline or thresholds file holding the entry, or the ground-truth file itself
    name: str  # the scenario or case id
    gt_dir: Path | None = None  # a ground-truth file's folder (its manifest is there)

    def message(self) -> str:
        if self.kind == "scenario":
            what = "baseline scenario: no case defines it"
        elif self.kind == "thresholds":
            what = "thresholds entry: no such case"
        else:
            what = "ground-truth file: no case compares its output with it"
        return f"unused {what} (diffperf lint --prune removes it)"

    def line(self) -> str:
        return f"{self.file}: {self.name}: {self.message()}"


def unused_entries(
    cases: Mapping[str, Case],
    known: Iterable[str] = (),
    *,
    baselines: BaselineSet | None = None,
    hardware: Platform | None = None,
    thresholds: ThresholdSet | None = None,
    gt_dir: Path | None = None,
) -> list[Unused]:
    """Every unused entry, file by file (``known``: case ids that exist but cannot run, such as SGLang's not
    expressible ones: their entries are not unused)."""
    ids = set(cases) | set(known)
    out: list[Unused] = []
    if baselines is not None:
        scenarios = select_scenarios(baselines, {}, hardware)
        out += [Unused("scenario", baselines.source[s], s) for s in scenarios if s not in ids]
    if thresholds is not None:
        for path in thresholds.files:
            entries = thresholds.raw[path].get("cases")
            out += [Unused("thresholds", path, cid) for cid in entries or {} if cid not in ids]
    if gt_dir is not None:
        compared = {cid for cid, case in cases.items() if case.run_consistency_check} | (set(known) - set(cases))
        folders = [gt_dir] + ([gt_dir / hardware] if hardware and (gt_dir / hardware).is_dir() else [])
        for folder in folders:
            for path in sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in GT_SUFFIXES):
                found = GT_NAME.match(path.name)
                if found and found.group("case") not in compared:
                    out.append(Unused("ground truth", path, found.group("case"), gt_dir))
    return out


def prune(found: Iterable[Unused], dry_run: bool = False, show: Callable[[str], None] = print) -> list[Path]:
    """Remove the unused entries, showing each file's diff (and each deleted file) before it changes; the files
    changed (none in a dry run).

    All or nothing: every file to edit or delete is checked first (inside its folder once symlinks are resolved,
    its new text loading as its kind's loader reads it); any problem is a DiffperfError before the first change.
    """
    found = list(found)
    edits: dict[Path, list[tuple[str, ...]]] = {}
    kinds: dict[Path, Kind] = {}
    deleted: list[Path] = []
    for u in found:
        if u.kind == "ground truth":
            root = u.gt_dir or u.file.parent
            _check_inside(u.file, root)
            manifest = root / MANIFEST
            if manifest.is_file() or manifest.is_symlink():
                _check_inside(manifest, root)
                edits.setdefault(manifest, []).append(("files", u.file.relative_to(root).as_posix()))
                kinds[manifest] = u.kind
            deleted.append(u.file)
        else:
            edits.setdefault(u.file, []).append(("scenarios" if u.kind == "scenario" else "cases", u.name))
            kinds[u.file] = u.kind
    planned = {path: _pruned(path, members, kinds[path]) for path, members in edits.items()}
    for path, (old, new) in planned.items():
        show("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path))))
    for path in deleted:
        show(f"delete {path}")
    if dry_run:
        return []
    changed = []
    try:
        for path, members in edits.items():

            def change(
                current: bytes | None, members: list[tuple[str, ...]] = members, path: Path = path
            ) -> str | None:
                new = _removed(_text(current, path), members)
                _check_loads(path, new, kinds[path])
                return new

            if planned[path][0] != planned[path][1] and atomicfile.update(path, change):
                changed.append(path)
        for path in deleted:
            path.unlink(missing_ok=True)
            changed.append(path)
    except OSError as exc:
        done = f" ({len(changed)} file(s) changed before it)" if changed else ""
        raise DiffperfError(f"cannot prune: {exc.strerror or exc}{done}", source=str(exc.filename or "")) from None
    return changed


def _check_inside(path: Path, folder: Path) -> None:
    """DiffperfError unless ``path`` stays inside ``folder`` once symlinks are resolved."""
    if not path.resolve().is_relative_to(folder.resolve()):
        raise DiffperfError(
            f"leads out of the ground-truth folder {folder} (to {path.resolve()}): nothing pruned", source=str(path)
        )


def _text(data: bytes | None, path: Path) -> str:
    try:
        return (data or b"").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DiffperfError(f"cannot read: {exc}", source=str(path)) from None


def _removed(text: str, members: list[tuple[str, ...]]) -> str:
    for member in members:
        text = remove_member(text, member)
    return text


def _pruned(path: Path, members: list[tuple[str, ...]], kind: Kind) -> tuple[str, str]:
    """The file's text now and once pruned, the latter checked to load."""
    try:
        old = _text(path.read_bytes(), path)
    except OSError as exc:
        raise DiffperfError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    new = _removed(old, members)
    _check_loads(path, new, kind)
    return old, new


def _check_loads(path: Path, text: str, kind: Kind) -> None:
    """DiffperfError unless ``text`` is a file of ``kind`` its loader reads."""
    doc = json_object(*parse_json_text(text, path), path)
    if kind == "scenario":
        check_baseline_doc(doc, path)
    elif kind == "thresholds":
        validate(ThresholdFile, doc, path, "")
    else:
        validate(Manifest, doc, path, "")
