"""The consistency check's settings (``ConsistencyConfig``) and the SGLang environment aliases.

Environment: ``SGLANG_CONSISTENCY_GT_DIR`` (GT folder when no option sets one);
``SGLANG_GEN_GT=1`` (regenerate GT) with ``SGLANG_GT_OUTPUT_DIR`` (where to write it);
``DIFFPERF_SKIP_CONSISTENCY=1`` / ``SGLANG_SKIP_CONSISTENCY=1`` (compare nothing);
``SGLANG_DIFFUSION_ARTIFACT_DIR`` (artifacts folder when no option sets one).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._util.text import truthy
from ..errors import DiffperfError
from ..platforms import Platform
from .clip import DEFAULT_MODEL, DEFAULT_PRETRAINED, resolve_weights
from .frames import DEFAULT_FRAMES, FrameSpec, parse_frames_spec

if TYPE_CHECKING:  # the remote source's modules (requests) load when a run compares with it
    from .gtlookup import SGLangGT

SKIP_VARS = ("DIFFPERF_SKIP_CONSISTENCY", "SGLANG_SKIP_CONSISTENCY")
DEFAULT_FRAME_SPEC = parse_frames_spec(DEFAULT_FRAMES)


@dataclass(frozen=True)
class ConsistencyConfig:
    """Everything ``check_output`` needs besides the output."""

    gt_dir: Path | None
    platform: Platform | None = None
    clip_model: str = DEFAULT_MODEL
    clip_pretrained: str = DEFAULT_PRETRAINED
    frames: FrameSpec = DEFAULT_FRAME_SPEC
    artifacts_dir: Path | None = None
    regen: bool = False
    skip: bool = False
    skip_reason: str = ""  # e.g. "SGLANG_SKIP_CONSISTENCY=1", for the report header
    sglang: SGLangGT | None = None  # SGLang's lookup (a remote source or a data-repository clone); gt_dir its root

    def require_gt_dir(self) -> Path:
        """The ground-truth folder; a DiffperfError naming the option when none is set."""
        if self.gt_dir is None:
            raise DiffperfError(
                "no ground-truth folder: set --diffperf-gt-dir (ini diffperf_gt_dir) or SGLANG_CONSISTENCY_GT_DIR",
                source="--diffperf-gt-dir",
            )
        return self.gt_dir

    @property
    def remote(self) -> bool:
        """Ground truth comes from a remote source (fetched and cached), not from a folder."""
        return self.sglang is not None and self.sglang.tree.fetcher is not None

    @property
    def compares_with_local_folder(self) -> bool:
        """Outputs are compared with ground truth in a local folder: neither skipped, regenerated nor fetched."""
        return not (self.skip or self.regen or self.remote)

    def describe(self) -> str:
        """One line for the report header."""
        if self.regen:
            return f"regenerating ground truth into {self.gt_dir}"
        if self.skip:
            return f"skipped ({self.skip_reason or 'skip requested'})"
        if self.sglang is not None:
            return f"{self.sglang.describe()}, CLIP {self.clip_model}/{self.clip_pretrained}, frames {self.frames.text}"
        where = f"{self.gt_dir}" + (f" (platform folder {self.platform}/ first)" if self.platform else "")
        return f"GT {where}, CLIP {self.clip_model}/{self.clip_pretrained}, frames {self.frames.text}"


def config_from_env(
    gt_dir: Path | None = None,
    platform: Platform | None = None,
    clip_model: str | None = None,
    clip_pretrained: str | None = None,
    frames: FrameSpec | None = None,
    artifacts_dir: Path | None = None,
    regen: bool = False,
    env: Mapping[str, str] | None = None,
    sglang: SGLangGT | None = None,
) -> ConsistencyConfig:
    """Build the config from option values (None = unset) and the SGLang environment variables.

    An option value wins over its environment alias; ``SGLANG_GEN_GT=1`` turns regeneration on and
    ``SGLANG_GT_OUTPUT_DIR`` then names the folder written. Regeneration wins over skipping (SGLang
    sets both when it generates GT). ``sglang``: SGLang's lookup, whose root ``gt_dir`` is.
    """
    env = os.environ if env is None else env
    gen_gt = truthy(env.get("SGLANG_GEN_GT"))
    if gen_gt and env.get("SGLANG_GT_OUTPUT_DIR"):
        gt_dir, sglang = Path(env["SGLANG_GT_OUTPUT_DIR"]), None
    elif gt_dir is None and env.get("SGLANG_CONSISTENCY_GT_DIR"):
        gt_dir = Path(env["SGLANG_CONSISTENCY_GT_DIR"])
    if artifacts_dir is None and env.get("SGLANG_DIFFUSION_ARTIFACT_DIR"):
        artifacts_dir = Path(env["SGLANG_DIFFUSION_ARTIFACT_DIR"])
    skip_by = [f"{name}={env[name]}" for name in SKIP_VARS if truthy(env.get(name))]
    return ConsistencyConfig(
        gt_dir=None if gt_dir is None else Path(gt_dir).expanduser().resolve(),
        platform=platform,
        clip_model=clip_model or DEFAULT_MODEL,
        clip_pretrained=clip_pretrained or DEFAULT_PRETRAINED,
        frames=frames or DEFAULT_FRAME_SPEC,
        artifacts_dir=None if artifacts_dir is None else Path(artifacts_dir).expanduser().resolve(),
        regen=regen or gen_gt,
        skip=bool(skip_by),
        skip_reason=", ".join(skip_by),
        sglang=sglang,
    )


EXTRA_MODULES = ("torch", "open_clip", "skimage")  # what the 'consistency' extra installs


def require_extra() -> None:
    """DiffperfError naming the extra to install when the comparison's libraries are not installed.

    Looks them up without importing them (torch and open_clip take seconds), so a mistake in the other
    settings is reported at once.
    """
    missing = [name for name in EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise DiffperfError(
            f"comparing outputs needs the 'consistency' extra ({', '.join(missing)} missing): "
            "pip install 'pytest-diffperf[consistency]'",
            source="consistency",
        )


def validate_config(cfg: ConsistencyConfig) -> None:
    """Fail early with one DiffperfError: the extra missing, no GT folder. Imports nothing: the CLIP model is
    ``check_clip_model``'s, which the plugin calls once every other input has been read.
    """
    if cfg.skip and not cfg.regen:
        return
    require_extra()
    gt_dir = cfg.require_gt_dir()
    if cfg.regen and cfg.remote:
        assert cfg.sglang is not None
        raise DiffperfError(
            f"--regen-ground-truth writes into a local folder, not into {cfg.sglang.tree.label}: clone the data "
            "repository and pass its diffusion-ci/consistency_gt folder (new files go to sglang_generated/, "
            "ready for a pull request), or any folder",
            source="--diffperf-gt-dir",
        )
    if cfg.compares_with_local_folder and not gt_dir.is_dir():
        raise DiffperfError(f"ground-truth folder {gt_dir} does not exist", source="--diffperf-gt-dir")


def check_clip_model(cfg: ConsistencyConfig) -> None:
    """DiffperfError when a run that compares with a local GT folder names an unknown CLIP model or weights that
    are not available offline. Loads no model, but imports open_clip and torch (seconds)."""
    if cfg.compares_with_local_folder:
        resolve_weights(cfg.clip_model, cfg.clip_pretrained)
