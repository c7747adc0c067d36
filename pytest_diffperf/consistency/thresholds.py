"""SGLang consistency-threshold files: schema, loader, and the per-case thresholds.

Layouts: a single ``consistency_threshold.json`` (SGLang <= 0.5.12) or
``consistency_thresholds/<platform>.json`` (later), where a platform file is merged over ``h100.json``:
its top-level keys replace H100's and each of its cases replaces the whole H100 entry. A field a
case leaves out falls back to the (merged) file defaults, then to the built-in defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

from .._util.findings import Finding, schema_problems
from .._util.jsonfile import STRICT, read_json_object, validate
from ..errors import DiffperfError
from ..platforms import DEFAULT_GPU, Platform, locate, threshold_file_stems

SINGLE_FILE = "consistency_threshold.json"
PLATFORM_DIR = "consistency_thresholds"
BASE_FILE = f"{DEFAULT_GPU}.json"

Similarity = Annotated[float, Field(ge=-1, le=1)]  # CLIP cosine and SSIM live in [-1, 1]
Psnr = Annotated[float, Field(ge=0)]
PixelDiff = Annotated[float, Field(ge=0, le=255)]
NonNegative = Annotated[float, Field(ge=0)]  # an audio level (dB) or duration (s) difference
AUDIO_KEYS = {  # AudioThresholds field -> SGLang's key (a case's; the file default adds default_)
    "spectral": "audio_spectral_similarity_threshold",
    "waveform": "audio_waveform_correlation_threshold",
    "rms_db": "audio_rms_db_diff_threshold",
    "duration": "audio_duration_diff_threshold",
}


@dataclass(frozen=True)
class Thresholds:
    """Minimum CLIP similarity, SSIM and PSNR (dB); maximum mean absolute pixel difference."""

    clip: float
    ssim: float
    psnr: float
    mad: float


@dataclass(frozen=True)
class AudioThresholds:
    """SGLang's audio thresholds: minimum spectral similarity and waveform correlation, maximum RMS level (dB)
    and duration (s) differences."""

    spectral: float = 0.95
    waveform: float = 0.90
    rms_db: float = 2.0
    duration: float = 0.10


BUILTIN_DEFAULTS = {
    "image": Thresholds(clip=0.92, ssim=0.95, psnr=28.0, mad=8.0),
    "video": Thresholds(clip=0.90, ssim=0.92, psnr=24.0, mad=10.0),
}


class CaseThresholds(BaseModel):
    """One case's entry; other keys (audio thresholds, ...) are kept."""

    model_config = STRICT

    clip_threshold: Similarity | None = None
    ssim_threshold: Similarity | None = None
    psnr_threshold: Psnr | None = None
    mean_abs_diff_threshold: PixelDiff | None = None
    audio_spectral_similarity_threshold: Similarity | None = None
    audio_waveform_correlation_threshold: Similarity | None = None
    audio_rms_db_diff_threshold: NonNegative | None = None
    audio_duration_diff_threshold: NonNegative | None = None


class ThresholdFile(BaseModel):
    model_config = STRICT

    cases: dict[str, CaseThresholds] = Field(default_factory=dict)
    default_clip_threshold_image: Similarity | None = None
    default_clip_threshold_video: Similarity | None = None
    default_ssim_threshold_image: Similarity | None = None
    default_ssim_threshold_video: Similarity | None = None
    default_psnr_threshold_image: Psnr | None = None
    default_psnr_threshold_video: Psnr | None = None
    default_mean_abs_diff_threshold_image: PixelDiff | None = None
    default_mean_abs_diff_threshold_video: PixelDiff | None = None
    default_audio_spectral_similarity_threshold: Similarity | None = None
    default_audio_waveform_correlation_threshold: Similarity | None = None
    default_audio_rms_db_diff_threshold: NonNegative | None = None
    default_audio_duration_diff_threshold: NonNegative | None = None

    def audio_defaults(self, fallback: AudioThresholds) -> AudioThresholds:
        """This file's audio defaults, ``fallback`` where unset."""
        values = {name: getattr(self, f"default_{key}") for name, key in AUDIO_KEYS.items()}
        return dataclasses.replace(fallback, **{k: v for k, v in values.items() if v is not None})

    def defaults(self, kind: str, fallback: Thresholds) -> Thresholds:
        """This file's defaults for ``kind`` ("image" or "video"), ``fallback`` where unset."""

        def pick(metric: str, default: float) -> float:
            value = getattr(self, f"default_{metric}_threshold_{kind}")
            return default if value is None else value

        return Thresholds(
            clip=pick("clip", fallback.clip),
            ssim=pick("ssim", fallback.ssim),
            psnr=pick("psnr", fallback.psnr),
            mad=pick("mean_abs_diff", fallback.mad),
        )


@dataclass
class ThresholdSet:
    files: list[Path]  # base (H100) file first
    defaults: dict[str, Thresholds]  # "image" / "video"
    cases: dict[str, CaseThresholds]
    source: dict[str, Path]  # case id -> file its entry came from
    raw: dict[Path, dict[str, Any]] = field(repr=False)
    audio_defaults: AudioThresholds = AudioThresholds()

    def audio_for_case(self, case_id: str) -> AudioThresholds:
        """SGLang's ``get_audio_consistency_thresholds``: the case's entry, then the file defaults, then SGLang's."""
        entry = self.cases.get(case_id)
        values = {name: getattr(entry, key) for name, key in AUDIO_KEYS.items()} if entry else {}
        return dataclasses.replace(self.audio_defaults, **{k: v for k, v in values.items() if v is not None})

    def for_case(self, case_id: str, is_video: bool) -> Thresholds:
        base = self.defaults["video" if is_video else "image"]
        entry = self.cases.get(case_id)
        if entry is None:
            return base

        def pick(value: float | None, default: float) -> float:
            return default if value is None else value

        return Thresholds(
            clip=pick(entry.clip_threshold, base.clip),
            ssim=pick(entry.ssim_threshold, base.ssim),
            psnr=pick(entry.psnr_threshold, base.psnr),
            mad=pick(entry.mean_abs_diff_threshold, base.mad),
        )


def threshold_files(path: str | Path, hardware: Platform | None = None) -> list[Path]:
    """The files ``load_thresholds`` merges, base file first."""
    found = locate(path, hardware, single=SINGLE_FILE, folder=PLATFORM_DIR, stems=threshold_file_stems)
    if found.folder is None:
        assert found.file is not None
        base = found.file.parent / BASE_FILE
        if found.file.parent.name == PLATFORM_DIR and base.is_file() and base.resolve() != found.file.resolve():
            return [base, found.file]
        return [found.file]
    # A platform without its own file uses H100's thresholds, as SGLang does.
    files = [p for p in (found.folder / BASE_FILE, found.file) if p is not None and p.is_file()]
    if not files:
        raise DiffperfError(f"no {BASE_FILE} and no file for platform {hardware!r} here", source=str(found.folder))
    return list(dict.fromkeys(files))


def load_thresholds(path: str | Path, hardware: Platform | None = None) -> ThresholdSet:
    """Load a threshold file or ``consistency_thresholds/`` folder (``hardware`` picks the platform)."""
    files = threshold_files(path, hardware)
    raw = {f: read_json_object(f) for f in files}
    defaults = dict(BUILTIN_DEFAULTS)
    audio = AudioThresholds()
    cases: dict[str, CaseThresholds] = {}
    source: dict[str, Path] = {}
    for f in files:
        parsed = validate(ThresholdFile, raw[f], f, "")
        defaults = {kind: parsed.defaults(kind, fallback) for kind, fallback in defaults.items()}
        audio = parsed.audio_defaults(audio)
        for case_id, entry in parsed.cases.items():
            cases[case_id] = entry
            source[case_id] = f
    return ThresholdSet(files, defaults, cases, source, raw, audio)


def is_threshold_document(doc: dict[str, Any]) -> bool:
    """Whether a parsed JSON object has the shape of a consistency-threshold file."""
    if "scenarios" in doc:
        return False
    return isinstance(doc.get("cases"), dict) or any(k.startswith("default_") and "threshold" in k for k in doc)


def lint_threshold_doc(path: Path, doc: dict[str, Any]) -> list[Finding]:
    """Every schema problem of one threshold file."""
    return [Finding("error", str(path), "", key, msg) for key, msg in schema_problems(ThresholdFile, doc)]
