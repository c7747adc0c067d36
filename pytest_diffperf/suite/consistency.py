"""A scenario's output against its ground truth: the plugin's side of ``consistency``.

Off unless ground truth is configured (``--diffperf-gt-dir`` or ``SGLANG_CONSISTENCY_GT_DIR``), ground
truth is being regenerated, or a skip switch is set. A remote source, or a local clone of a data
repository, is read by the lookup of the case lists' release (its ``test/test_utils.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cases import Case
from ..consistency.config import ConsistencyConfig, config_from_env, validate_config
from ..consistency.gtsource import GTSpec, is_data_repo_layout, parse_gt_source
from ..consistency.result import ConsistencyFailure
from ..consistency.thresholds import BUILTIN_DEFAULTS, ThresholdSet, load_thresholds
from ..platforms import Platform
from ..serving.client import Output
from .options import Settings

if TYPE_CHECKING:
    from ..consistency.gtlookup import SGLangGT
    from ..consistency.sglangrules import Rules

GT_DIR_ENV = "SGLANG_CONSISTENCY_GT_DIR"
AUDIO_KEY = "expect_audio_output"  # SGLang's sampling-params field: the video has a sound track to compare
TEST_UTILS = Path("sglang", "multimodal_gen", "test", "test_utils.py")


def consistency_config(
    settings: Settings, regen: bool, env: Mapping[str, str] = os.environ
) -> ConsistencyConfig | None:
    """The check's settings, validated (the extra installed, GT folder present); None when off. The CLIP model and
    its weights are checked later (``check_clip_model``): that imports open_clip."""
    hardware = settings.diffperf_hardware
    spec = settings.diffperf_gt_dir
    if spec is None and env.get(GT_DIR_ENV):
        spec = parse_gt_source(str(Path(env[GT_DIR_ENV]).expanduser().absolute()))
    gt_dir, sglang = _opened(spec, settings, hardware, env) if spec is not None else (None, None)
    cfg = config_from_env(
        gt_dir=gt_dir,
        sglang=sglang,
        platform=hardware,
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


def _opened(
    spec: GTSpec, settings: Settings, hardware: Platform | None, env: Mapping[str, str]
) -> tuple[Path, SGLangGT | None]:
    """The GT root, and SGLang's lookup where it applies (the remote source's modules load only then)."""
    if spec.folder is not None and not is_data_repo_layout(spec.folder):
        return spec.folder, None
    from ..consistency.gtlookup import open_source

    return open_source(spec, release_rules(settings), hardware, env)


def release_rules(settings: Settings) -> Rules | None:
    """The GT lookup of the case lists' release (read from its test_utils.py); None for a JSON case file."""
    from ..consistency.sglangrules import read_rules
    from ..sglang.source import is_sglang_source, locate

    if settings.diffperf_cases is None or not is_sglang_source(settings.diffperf_cases):
        return None
    return read_rules(locate(settings.diffperf_cases).root / TEST_UTILS)


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
            audio=limits.audio_for_case(case.id) if case.is_video and expects_audio(case) else None,
        )
    except ConsistencyFailure as failure:
        return failure.result.to_dict(), failure
    return result.to_dict(), None


def expects_audio(case: Case) -> bool:
    """A case whose video has a sound track SGLang compares: ``expect_audio_output: true`` in a case file; in
    SGLang's converted lists, the field as they name it (listed among ``sglang_checks_not_run``)."""
    extra = case.model_extra or {}
    return extra.get(AUDIO_KEY) is True or AUDIO_KEY in (extra.get("sglang_checks_not_run") or [])
