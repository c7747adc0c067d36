"""Task types of models the table does not know, inferred from the cases' own fields (SGLang's registry reads
them from the model hub, which the plugin does not use).

Where an sglang with its registry is installed, that registry is asked first (``from_registry``, in a
separate process: it reads the model hub). Else the case lists are loaded twice with two different answers for every unknown model (``PROBES``): what
a case sets itself is the same in both loads, what SGLang derived from the task type is not. A model's
modality (image, video, 3d, action: what decides its cases' requests) is read from its cases' own fields:
an explicit modality, frames or fps, an image output format. A case whose sampling parameters SGLang
picks by the exact task type, or a model whose cases say nothing or disagree, is not expressible, with
the reason and the table entry that settles it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .task_types import TASK_TYPES, TaskType, how_to_add

PROBES: tuple[TaskType, TaskType] = ("T2V", "T2I")  # the two answers the unknown models get in the two loads
# A task type of each modality: what the case lists are loaded with once a model's modality is known.
REPRESENTATIVE: dict[str, TaskType] = {"image": "T2I", "video": "T2V", "3d": "I2M", "action": "VLA_ACTION"}
IMAGE_FORMATS = frozenset({"png", "jpeg", "jpg", "webp"})
# Run in a separate process: SGLang's registry, as its case lists ask it (a model -> its task type's name).
REGISTRY_QUERY = """
import json, sys
from sglang.multimodal_gen.registry import get_model_info
out = {}
for model in sys.argv[1:]:
    try:
        out[model] = get_model_info(model).pipeline_config_cls.task_type.name
    except Exception:
        out[model] = None
print(json.dumps(out))
"""


@dataclass(frozen=True)
class Guess:
    """A case's answer: its modality (None: its fields do not decide) and what decided it or why nothing did."""

    modality: str | None
    why: str
    defaulted: bool = False  # its sampling parameters are SGLang's defaults for the exact task type


@dataclass(frozen=True)
class Resolution:
    """Inferred task types by model, a one-line note per model, and the cases left undecided (id -> reason)."""

    task_types: dict[str, TaskType]
    notes: dict[str, str]
    undecided: dict[str, str]


def from_registry(models: Sequence[str], limit_s: float) -> dict[str, TaskType]:
    """The task types the installed sglang's own registry gives ``models`` (it reads the model hub), asked in a
    separate process under ``limit_s``; {} where no sglang with a registry is installed or it cannot answer."""
    if not models or not _has_registry():
        return {}
    try:
        done = subprocess.run(
            [sys.executable, "-c", REGISTRY_QUERY, *models],
            capture_output=True,
            text=True,
            timeout=limit_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {}
    lines = done.stdout.strip().splitlines()
    try:
        answers = json.loads(lines[-1]) if done.returncode == 0 and lines else {}
    except json.JSONDecodeError:
        return {}
    return {m: t for m, t in answers.items() if m in models and t in TASK_TYPES} if isinstance(answers, dict) else {}


def _has_registry() -> bool:
    """Whether an sglang package with ``multimodal_gen/registry.py`` is on the path (nothing imported)."""
    try:
        spec = importlib.util.find_spec("sglang")
    except (ImportError, ValueError):
        return False
    locations = list(spec.submodule_search_locations or []) if spec else []
    return any((Path(folder) / "multimodal_gen" / "registry.py").is_file() for folder in locations)


def guess(first: Any, second: Any) -> Guess:
    """The modality case ``first`` (loaded with ``PROBES[0]``; ``second`` the same case with ``PROBES[1]``) says."""
    sp = first.sampling_params
    modality = first.server_args.modality if first.server_args.modality == second.server_args.modality else None
    if not _same(sp, second.sampling_params):
        said = f"modality {modality!r}, but " if modality else ""
        return Guess(None, f"{said}its sampling parameters are the defaults SGLang picks by task type", defaulted=True)
    if modality is not None:
        return Guess(modality, f"server_args.modality = {modality!r}")
    video, image = _video_evidence(sp), _image_evidence(sp)
    if video and image:
        return Guess(None, f"its fields disagree ({video}; {image})")
    if video or image:
        return Guess("video" if video else "image", video or image)
    return Guess(None, "nothing in it says image or video (no modality, frames, fps or image output format)")


def _same(a: Any, b: Any) -> bool:
    """Equal field by field (the two loads' dataclasses are different classes: ``==`` says False)."""
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a).__name__ == type(b).__name__ and dataclasses.asdict(a) == dataclasses.asdict(b)  # type: ignore[arg-type]
    return bool(a == b)


def _video_evidence(sp: Any) -> str:
    for name in ("fps", "realtime_num_chunks"):
        if getattr(sp, name, None) is not None:
            return f"sampling_params.{name} = {getattr(sp, name)!r}"
    if getattr(sp, "expect_audio_output", False):
        return "sampling_params.expect_audio_output"
    if getattr(sp, "num_frames", None) is not None and not getattr(sp, "image_path", None):
        return f"sampling_params.num_frames = {sp.num_frames!r}"  # frames of an image input: an image model's layers
    return ""


def _image_evidence(sp: Any) -> str:
    if getattr(sp, "output_format", None) in IMAGE_FORMATS:
        return f"sampling_params.output_format = {sp.output_format!r}"
    return ""


def resolve(models: Iterable[str], first: Mapping[str, Any], second: Mapping[str, Any]) -> Resolution:
    """Each of ``models``' task type from its cases (``first``/``second``: the two loads' cases by id)."""
    task_types: dict[str, TaskType] = {}
    notes: dict[str, str] = {}
    undecided: dict[str, str] = {}
    for model in models:
        ids = [cid for cid, case in first.items() if case.server_args.model_path == model and cid in second]
        guesses = {cid: guess(first[cid], second[cid]) for cid in ids}
        decided = {cid: g for cid, g in guesses.items() if g.modality is not None}
        kinds = {g.modality for g in decided.values()}
        kind = next(iter(kinds)) if len(kinds) == 1 else None
        if kind in REPRESENTATIVE:
            cid, chosen = next(iter(decided.items()))
            task_types[model] = REPRESENTATIVE[kind]
            notes[model] = (
                f"model {model!r} is in no task-type table: {kind}, inferred from case {cid!r} ({chosen.why})"
            )
            why = "its sampling parameters are SGLang's defaults for the model's exact task type, not only its modality"
            undecided |= {cid: _reason(model, why) for cid, g in guesses.items() if g.defaulted}
            continue
        if kinds:
            why = "its cases disagree (" + "; ".join(f"{cid}: {g.why}" for cid, g in decided.items()) + ")"
        else:
            why = "; ".join(f"{cid}: {g.why}" for cid, g in guesses.items()) or "no case of it"
        undecided |= dict.fromkeys(ids, _reason(model, why))
    return Resolution(task_types, notes, undecided)


def _reason(model: str, why: str) -> str:
    return f"no task type is known for model {model!r} and its cases do not decide it ({why}): {how_to_add(model)}"
