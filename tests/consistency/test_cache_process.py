"""A fresh process reuses the GT embeddings cached by an earlier one: it embeds only the output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pytest_diffperf.consistency.check import check_output

from .synth import VIDEO_T, video

pytestmark = pytest.mark.server  # starts server processes

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from pathlib import Path
    from pytest_diffperf.consistency import clip
    from pytest_diffperf.consistency.clip import TINY_MODEL
    from pytest_diffperf.consistency.check import check_output
    from pytest_diffperf.consistency.config import config_from_env
    from pytest_diffperf.consistency.thresholds import BUILTIN_DEFAULTS

    frames = list(np.load(sys.argv[2]))
    cfg = config_from_env(gt_dir=Path(sys.argv[1]), clip_model=TINY_MODEL, clip_pretrained="none", env={})
    result = check_output("vid", 1, True, "mp4", frames, BUILTIN_DEFAULTS["video"], cfg)
    embedder = clip.get_embedder(TINY_MODEL, "none")
    print(json.dumps({"status": result.status, "embedded": embedder.images_embedded}))
    """
)


def test_second_process_embeds_only_the_output(make_cfg, gt_dir, tmp_path):
    frames = video(9)
    check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg(regen=True))
    check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg())  # this process fills the cache
    cache = sorted((gt_dir / ".clip-cache").glob("*.npy"))
    mtimes = [p.stat().st_mtime_ns for p in cache]
    np.save(tmp_path / "frames.npy", np.stack(frames))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(gt_dir), str(tmp_path / "frames.npy")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report == {"status": "pass", "embedded": 3}  # the 3 output frames; no GT frame
    assert [p.stat().st_mtime_ns for p in cache] == mtimes
