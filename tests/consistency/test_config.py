"""Config from options and SGLang's environment variables; early validation of option values."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diffperf.consistency.check import check_output
from pytest_diffperf.consistency.clip import TINY_MODEL
from pytest_diffperf.consistency.config import check_clip_model, config_from_env, validate_config
from pytest_diffperf.errors import DiffperfError

from .synth import VIDEO_T, video


def test_defaults():
    cfg = config_from_env(env={})
    assert (cfg.gt_dir, cfg.clip_model, cfg.clip_pretrained, cfg.frames.text) == (
        None,
        "ViT-L-14",
        "openai",
        "first,mid,last",
    )
    assert not cfg.regen and not cfg.skip and cfg.artifacts_dir is None


def test_gt_dir_option_wins_over_env(tmp_path):
    env = {"SGLANG_CONSISTENCY_GT_DIR": str(tmp_path / "env")}
    assert config_from_env(env=env).gt_dir == tmp_path / "env"
    assert config_from_env(gt_dir=tmp_path / "opt", env=env).gt_dir == tmp_path / "opt"


def test_sglang_gen_gt_writes_to_its_output_dir(tmp_path):
    env = {"SGLANG_GEN_GT": "1", "SGLANG_GT_OUTPUT_DIR": str(tmp_path / "out"), "SGLANG_SKIP_CONSISTENCY": "1"}
    cfg = config_from_env(gt_dir=tmp_path / "gt", env=env)
    assert cfg.regen and cfg.gt_dir == tmp_path / "out"
    cfg = config_from_env(gt_dir=tmp_path / "gt", env={**env, "SGLANG_GT_OUTPUT_DIR": ""})
    assert cfg.regen and cfg.gt_dir == tmp_path / "gt"


def test_regen_wins_over_skip_as_in_sglang_gt_generation(tmp_path):
    env = {"SGLANG_GEN_GT": "1", "SGLANG_GT_OUTPUT_DIR": str(tmp_path / "out"), "SGLANG_SKIP_CONSISTENCY": "1"}
    cfg = config_from_env(env=env)
    assert cfg.skip and check_output("v", 1, True, "mp4", video(3), VIDEO_T, cfg).status == "regenerated"
    assert (tmp_path / "out" / "v_1gpu_frame_mid.png").is_file()


@pytest.mark.parametrize("name", ["DIFFPERF_SKIP_CONSISTENCY", "SGLANG_SKIP_CONSISTENCY"])
@pytest.mark.parametrize("value, skip", [("1", True), ("true", True), ("0", False), ("", False)])
def test_skip_switches(name, value, skip):
    cfg = config_from_env(env={name: value})
    assert cfg.skip is skip
    assert cfg.skip_reason == (f"{name}={value}" if skip else "")
    if skip:
        assert cfg.describe() == f"skipped ({name}={value})"


def test_artifact_dir_alias(tmp_path):
    env = {"SGLANG_DIFFUSION_ARTIFACT_DIR": str(tmp_path / "a")}
    assert config_from_env(env=env).artifacts_dir == tmp_path / "a"
    assert config_from_env(artifacts_dir=tmp_path / "b", env=env).artifacts_dir == tmp_path / "b"


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(), "no ground-truth folder: set --diffperf-gt-dir"),
        (dict(gt_dir=Path("/no/such/gt")), "ground-truth folder /no/such/gt does not exist"),
    ],
)
def test_validate_config(kw, message):
    with pytest.raises(DiffperfError, match=message):
        validate_config(config_from_env(env={}, **kw))


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(clip_model="ViT-Nope"), "unknown open_clip model 'ViT-Nope'"),
        (dict(clip_model=TINY_MODEL, clip_pretrained="/no/w.bin"), "weights file /no/w.bin does not exist"),
    ],
)
def test_the_clip_model_is_checked_apart_from_the_settings(kw, message):
    cfg = config_from_env(gt_dir=Path("."), env={}, **kw)
    validate_config(cfg)  # reads the settings only (the plugin checks the model once every input is read)
    with pytest.raises(DiffperfError, match=message):
        check_clip_model(cfg)
    check_clip_model(config_from_env(gt_dir=Path("."), env={"SGLANG_SKIP_CONSISTENCY": "1"}, **kw))  # not compared


def test_validate_config_accepts(tmp_path):
    cfg = config_from_env(gt_dir=tmp_path, clip_model=TINY_MODEL, clip_pretrained="none", env={})
    validate_config(cfg)
    check_clip_model(cfg)
    validate_config(config_from_env(env={"SGLANG_SKIP_CONSISTENCY": "1"}))  # nothing to check
    validate_config(config_from_env(gt_dir=tmp_path / "new", regen=True, env={}))  # regen creates the folder
