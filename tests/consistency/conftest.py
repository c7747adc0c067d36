"""Fixtures for the consistency tests: the tiny random-init CLIP and a GT folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diffperf.consistency.clip import TINY_MODEL
from pytest_diffperf.consistency.config import ConsistencyConfig
from pytest_diffperf.consistency.frames import parse_frames_spec


@pytest.fixture
def gt_dir(tmp_path: Path) -> Path:
    path = tmp_path / "gt"
    path.mkdir()
    return path


@pytest.fixture
def make_cfg(gt_dir: Path):
    """ConsistencyConfig factory with the tiny random-init CLIP and the test's GT folder (``frames``: a spec's text)."""

    def make(**kw) -> ConsistencyConfig:
        base = dict(gt_dir=gt_dir, clip_model=TINY_MODEL, clip_pretrained="none")
        if "frames" in kw:
            kw["frames"] = parse_frames_spec(kw["frames"])
        return ConsistencyConfig(**{**base, **kw})

    return make
