"""`diffperf verify-sglang`'s ground-truth column: the candidate files a release's own lookup tries for a case
against the plugin's (``consistency.gtlookup`` by the rules read from the same ``test_utils.py``).

SGLang's ``_find_remote_consistency_gt_files`` (or the audio or action lookup) runs on the loaded harness with its
``requests`` answered offline: every file 404 but a video's first frames (so that every release probes each
group of frames whole: 0.5.12 stops at a group's first missing frame), the case map (from 0.5.17) a
synthetic one declaring each case's files official (so the official branch is exercised on both sides),
``time.sleep`` a no-op. The URLs it probes, in order, are its candidate list. The platform is the run's (``--hardware``, through the
harness's ``current_platform``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

from ..cases import Case
from ..consistency.gtlookup import SGLangGT
from ..consistency.gttree import local_tree
from ..consistency.sglangrules import CASE_MAP, Kind, Rules, base_names, read_rules, sglang_platform
from ..platforms import Platform
from ..sglang import harness
from ..sglang.standins import MG

TEST_UTILS = f"{MG}.test.test_utils"
PLATFORM_ENV = "SGLANG_DIFFUSION_CONSISTENCY_PLATFORM"
LABELS = ("0", "mid", "last")  # SGLang's key frames
LAST = LABELS[-1]
FINDERS = {
    "image": "_find_remote_consistency_gt_files",
    "video": "_find_remote_consistency_gt_files",
    "audio": "_find_remote_audio_consistency_gt_files",
    "action": "_find_remote_action_consistency_gt_files",
}  # SGLang's lookup of each kind of output
NOT_EXPRESSIBLE_KINDS = {
    "3d": "a mesh: SGLang compares no ground truth for it",
}


class _Answer:
    """A ``requests`` response: 200 with ``body`` (b"" included), else 404."""

    def __init__(self, body: bytes | None) -> None:
        self.status_code = 200 if body is not None else 404
        self.content = body or b""

    def json(self) -> Any:
        return json.loads(self.content)

    def close(self) -> None:
        pass


class _OfflineRequests:
    """Stands in for ``requests`` in SGLang's test utilities: records each URL, answers the case map."""

    RequestException = OSError

    def __init__(self, case_map_url: str, case_map: bytes) -> None:
        self.urls: list[str] = []
        self._case_map = (case_map_url, case_map)

    def _answer(self, url: str, *_args: Any, **_kwargs: Any) -> _Answer:
        if url == self._case_map[0]:
            return _Answer(self._case_map[1])
        self.urls.append(url)
        present = "_frame_" in url and not url.endswith(f"_frame_{LAST}.png")  # a group fails on its last frame
        return _Answer(b"" if present else None)

    head = get = _answer


def compare_all(
    loaded: harness.Harness, sglang_cases: Sequence[Any], ours: dict[str, Case], hardware: Platform
) -> dict[str, str]:
    """Case id -> ``equal``, ``different: <where>``, ``not expressible: <why>`` or ``not compared: <why>``."""
    module = loaded.modules[TEST_UTILS]
    path = Path(str(module.__file__))
    rules = read_rules(path)
    platform, npu = sglang_platform(hardware)
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="diffperf-verify-gt-") as tmp:
        for tc in sglang_cases:
            out[tc.id] = _compare(module, rules, tc, ours.get(tc.id), platform, npu, Path(tmp) / tc.id)
    return out


def _compare(
    module: ModuleType, rules: Rules, tc: Any, case: Case | None, platform: str, npu: bool, folder: Path
) -> str:
    modality = getattr(tc.server_args, "modality", "image")
    if not getattr(tc, "run_consistency_check", False):
        return "not compared: run_consistency_check is false"
    if modality in NOT_EXPRESSIBLE_KINDS:
        return f"not expressible: {NOT_EXPRESSIBLE_KINDS[modality]}"
    kind: Kind = "action" if modality == "action" else "video" if modality == "video" else "image"
    num_gpus = int(tc.server_args.num_gpus)
    fmt = tc.sampling_params.output_format
    declared = base_names(rules, tc.id, num_gpus, kind, fmt, LABELS)
    case_map = json.dumps({"cases": {tc.id: {"outputs": declared}}}).encode()
    theirs = _sglang_candidates(module, rules, tc.id, num_gpus, kind, fmt, npu, case_map)
    if theirs is None:
        return f"not expressible: this release has no {kind} ground-truth lookup"
    (folder / CASE_MAP).parent.mkdir(parents=True, exist_ok=True)
    (folder / CASE_MAP).write_bytes(case_map)
    lookup = SGLangGT(local_tree(folder), rules, platform, npu, "verify")
    mine = [rel for group in lookup.candidates(tc.id, num_gpus, kind, fmt, LABELS) for rel in group]
    foreign = [url for url in theirs if url.startswith(("http://", "https://"))]
    theirs = [url for url in theirs if url not in foreign]
    if theirs != mine:
        return "different: " + _first_difference(theirs, mine)
    note = "" if case is not None or kind == "action" else " (the case itself is not expressible)"
    if foreign:
        note += f"; explained: the plugin does not try {len(foreign)} file(s) outside the pinned repository"
    if kind == "action":
        return f"not expressible: SGLang's lookup is equal ({len(mine)} candidates), but action outputs are not run"
    if getattr(tc.sampling_params, "expect_audio_output", False):
        audio_theirs = _sglang_candidates(module, rules, tc.id, num_gpus, "audio", None, npu, case_map)
        audio_mine = [rel for group in lookup.candidates(tc.id, num_gpus, "audio", None, ("",)) for rel in group]
        if audio_theirs is not None and audio_theirs != audio_mine:
            return "different: sound track " + _first_difference(audio_theirs, audio_mine)
        note += f"; sound track equal ({len(audio_mine)} candidates)"
    return f"equal ({len(mine)} candidates){note}"


def _sglang_candidates(
    module: ModuleType,
    rules: Rules,
    case_id: str,
    num_gpus: int,
    kind: Kind,
    fmt: str | None,
    npu: bool,
    case_map: bytes,
) -> list[str] | None:
    """The files SGLang's own lookup probes, in order, below its GT root (others as full URLs)."""
    root = rules.npu_root_url if npu else rules.root_url
    find = getattr(module, FINDERS[kind], None)
    if find is None:
        return None
    fake = _OfflineRequests(f"{root}/official_generated/case_map.json", case_map)
    with _patched(module, fake):
        if kind in ("action", "audio"):
            find(case_id, num_gpus)
        else:
            find(case_id, num_gpus, kind == "video", fmt)
    seen = list(dict.fromkeys(fake.urls))
    return [u.removeprefix(f"{root}/") if u.startswith(f"{root}/") else u for u in seen]


@contextlib.contextmanager
def _patched(module: ModuleType, fake: _OfflineRequests) -> Iterator[None]:
    """SGLang's module with offline ``requests``, no sleeping, no cached lookups; the platform variable unset."""
    names = ("requests", "time", "_official_consistency_gt_outputs_cache", "_gt_exists_remote_cache")
    saved = {n: getattr(module, n) for n in names if hasattr(module, n)}
    platform_env = os.environ.pop(PLATFORM_ENV, None)
    module.requests = fake  # type: ignore[attr-defined]
    module.time = SimpleNamespace(sleep=lambda _s: None, time=time.time, monotonic=time.monotonic)  # type: ignore[attr-defined]
    if "_official_consistency_gt_outputs_cache" in saved:
        module._official_consistency_gt_outputs_cache = None  # type: ignore[attr-defined]
    if "_gt_exists_remote_cache" in saved:
        module._gt_exists_remote_cache = set()  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for n, value in saved.items():
            setattr(module, n, value)
        if platform_env is not None:
            os.environ[PLATFORM_ENV] = platform_env


def _first_difference(theirs: list[str], mine: list[str]) -> str:
    for index, (a, b) in enumerate(zip(theirs, mine, strict=False)):
        if a != b:
            return f"candidate {index + 1}: SGLang {a}, plugin {b}"
    longer, who = (theirs, "SGLang") if len(theirs) > len(mine) else (mine, "plugin")
    return f"{who} tries more: {', '.join(longer[min(len(theirs), len(mine)) :])}"


def summary(results: dict[str, str]) -> str:
    """``N equal, M not compared, ...`` by the first word(s) of each result."""
    heads = [r.split(":")[0].split(" (")[0] for r in results.values()]
    return ", ".join(f"{heads.count(h)} {h}" for h in dict.fromkeys(heads)) or "no case"


def differs(results: dict[str, str]) -> bool:
    return any(r.startswith("different") for r in results.values())
