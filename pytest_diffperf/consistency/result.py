"""The outcome of one consistency check, its JSON form, and the exception that fails a test."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import DiffperfFailure
from .metrics import METRICS, FrameMetrics, json_number
from .thresholds import Thresholds

PREFIX = "CONSISTENCY:"  # every failure message starts with this; perf failures never do

Status = Literal["pass", "fail", "skipped", "regenerated"]  # the outcome words of the rest of the plugin
Reason = Literal["mismatch", "shape", "missing-gt", "integrity"]  # why a check failed


@dataclass(frozen=True)
class FrameResult:
    index: int  # frame index in the output
    label: str  # GT label ("0", "mid", "last", "17"; "" for an image)
    gt_file: str
    metrics: FrameMetrics
    failed: tuple[str, ...]  # metric names that missed their threshold

    def to_dict(self) -> dict[str, Any]:
        m = self.metrics
        return {
            "index": self.index,
            "label": self.label,
            "gt_file": self.gt_file,
            **{name: json_number(getattr(m, name)) for name in METRICS},
            "failed": list(self.failed),
        }


@dataclass
class ConsistencyResult:
    case_id: str
    num_gpus: int
    is_video: bool
    status: Status
    message: str = ""
    reason: Reason | None = None
    thresholds: Thresholds | None = None
    frames: list[FrameResult] = field(default_factory=list)
    gt_files: list[str] = field(default_factory=list)
    integrity: str = ""  # "verified" or why not
    artifacts: list[str] = field(default_factory=list)
    audio: dict[str, Any] | None = None  # the sound track's check: gt_file, metrics, thresholds, failed

    @property
    def passed(self) -> bool:
        return self.status != "fail"

    def worst(self) -> dict[str, float]:
        """The worst value of each metric over the compared frames (min, or max for mad)."""
        if not self.frames:
            return {}
        out = {name: min(getattr(f.metrics, name) for f in self.frames) for name in ("clip", "ssim", "psnr")}
        out["mad"] = max(f.metrics.mad for f in self.frames)
        return out

    def to_dict(self) -> dict[str, Any]:
        t = self.thresholds
        return {
            "case_id": self.case_id,
            "num_gpus": self.num_gpus,
            "kind": "video" if self.is_video else "image",
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "thresholds": None if t is None else {name: getattr(t, name) for name in METRICS},
            "worst": {k: json_number(v) for k, v in self.worst().items()},
            "frames": [f.to_dict() for f in self.frames],
            "gt_files": self.gt_files,
            "integrity": self.integrity,
            "artifacts": self.artifacts,
            "audio": self.audio,
        }


class ConsistencyFailure(DiffperfFailure):
    """The output does not match its ground truth (or the GT is missing or tampered with).

    ``str()`` starts with ``CONSISTENCY:``; ``.result`` is the ConsistencyResult (status "fail").
    """

    def __init__(self, result: ConsistencyResult):
        super().__init__(result.message)
        self.result = result


def fmt(value: float) -> str:
    """A metric for messages: 4 decimals, ``inf`` for identical frames."""
    return f"{value:.4f}" if math.isfinite(value) else str(value)


def thresholds_line(t: Thresholds) -> str:
    return f"clip >= {t.clip:g}, ssim >= {t.ssim:g}, psnr >= {t.psnr:g}, mad <= {t.mad:g}"


def frame_line(f: FrameResult) -> str:
    m = f.metrics
    name = f"frame {f.label} (index {f.index})" if f.label else "image"
    verdict = f"FAIL: {', '.join(f.failed)}" if f.failed else "pass"
    return f"{name}: clip={fmt(m.clip)} ssim={fmt(m.ssim)} psnr={fmt(m.psnr)} mad={fmt(m.mad)}  {verdict}"
