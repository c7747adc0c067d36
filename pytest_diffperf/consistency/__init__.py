"""Output consistency against ground truth: CLIP similarity, SSIM, PSNR and mean absolute difference
per compared frame, against SGLang-named GT files with a hash manifest and a CLIP embedding cache.

The plugin calls ``config_from_env`` once, ``validate_config`` at session start, ``check_output``
per scenario and ``write_summary`` at session end.
"""

from .artifacts import write_summary
from .check import check_output
from .clip import DEFAULT_MODEL, DEFAULT_PRETRAINED, TINY_MODEL
from .config import ConsistencyConfig, config_from_env, validate_config
from .frames import DEFAULT_FRAMES, FrameSpec, parse_frames_spec, select_frames
from .result import PREFIX, ConsistencyFailure, ConsistencyResult, FrameResult

__all__ = [
    "DEFAULT_FRAMES",
    "DEFAULT_MODEL",
    "DEFAULT_PRETRAINED",
    "PREFIX",
    "TINY_MODEL",
    "ConsistencyConfig",
    "ConsistencyFailure",
    "ConsistencyResult",
    "FrameResult",
    "FrameSpec",
    "check_output",
    "config_from_env",
    "parse_frames_spec",
    "select_frames",
    "validate_config",
    "write_summary",
]
