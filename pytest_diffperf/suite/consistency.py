"""A scenario's output against its ground truth: the plugin's side of ``consistency``.

Off unless a ground-truth folder is configured (``--diffperf-gt-dir`` or
``SGLANG_CONSISTENCY_GT_DIR``), ground truth is being regenerated, or a skip switch is set.
"""

from __future__ import annotations

from typing import Any

from ..cases import Case
from ..consistency.config import ConsistencyConfig, config_from_env, validate_config
from ..consistency.result import ConsistencyFailure
from ..consistency.thresholds import BUILTIN_DEFAULTS, ThresholdSet, load_thresholds
from ..platforms import canonical_platform
from ..serving.client import Output
from .options import Settings


def consistency_config(settings: Settings, regen: bool) -> ConsistencyConfig | None:
    """The check's settings, validated (weights available offline, GT folder present); None when off."""
    cfg = config_from_env(
        gt_dir=settings.diffperf_gt_dir,
        platform=canonical_platform(settings.diffperf_hardware) if settings.diffperf_hardware else None,
        clip_model=settings.diffperf_clip_model,
        clip_pretrained=settings.diffperf_clip_pretrained,
        frames=settings.diffperf_frames,
        artifacts_dir=settings.diffperf_artifacts,
        regen=regen,
    )
    if cfg.gt_dir is None and not (cfg.regen or cfg.skip):
        return None
    validate_config(cfg)
    return cfg


def thresholds(settings: Settings) -> ThresholdSet:
    """The thresholds file (SGLang format, platform merge), or the built-in defaults alone."""
    if settings.diffperf_thresholds is None:
        return ThresholdSet([], dict(BUILTIN_DEFAULTS), {}, {}, {})
    return load_thresholds(settings.diffperf_thresholds, settings.diffperf_hardware)


def check_case_output(
    case: Case, output: Output, cfg: ConsistencyConfig, limits: ThresholdSet
) -> tuple[dict[str, Any], ConsistencyFailure | None]:
    """The check's result as a dict, and the failure to report (None when it passed, was skipped or regenerated)."""
    from ..consistency.check import check_output  # numpy and PIL (torch later): loaded by the first check

    try:
        result = check_output(
            case.id,
            case.num_gpus,
            case.is_video,
            output.extension,
            output.frames(),
            limits.for_case(case.id, case.is_video),
            cfg,
            media=output.data,
        )
    except ConsistencyFailure as failure:
        return failure.result.to_dict(), failure
    return result.to_dict(), None
