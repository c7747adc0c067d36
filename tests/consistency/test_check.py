"""check_output end to end with the tiny random-init CLIP: regen, pass, fail, missing, tampered, artifacts."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from PIL import Image

from pytest_diffperf.consistency import clip, groundtruth, manifest
from pytest_diffperf.consistency.artifacts import write_summary
from pytest_diffperf.consistency.check import check_output
from pytest_diffperf.consistency.metrics import pixel_metrics
from pytest_diffperf.consistency.result import ConsistencyFailure
from pytest_diffperf.consistency.thresholds import Thresholds

from .synth import IMAGE_T, VIDEO_T, noisy, scene, video


def regen(make_cfg, case="vid", frames=None, is_video=True, **kw):
    frames = video() if frames is None else frames
    return check_output(case, 1, is_video, "png", frames, VIDEO_T, make_cfg(regen=True, **kw))


def test_regen_then_identical_output_passes(make_cfg, gt_dir):
    frames = video(9)
    done = regen(make_cfg, frames=frames)
    assert done.status == "regenerated"
    names = ["vid_1gpu_frame_0.png", "vid_1gpu_frame_mid.png", "vid_1gpu_frame_last.png"]
    assert done.gt_files == [str(gt_dir / n) for n in names]
    assert sorted(json.loads((gt_dir / "manifest.json").read_text())["files"]) == sorted(names)
    np.testing.assert_array_equal(np.asarray(Image.open(gt_dir / names[1])), frames[4])
    result = check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg())
    assert result.status == "pass" and result.integrity == "verified"
    assert [(f.index, f.label) for f in result.frames] == [(0, "0"), (4, "mid"), (8, "last")]
    for f in result.frames:
        assert f.metrics.clip == pytest.approx(1.0, abs=1e-5)
        assert (f.metrics.ssim, f.metrics.psnr, f.metrics.mad) == (1.0, math.inf, 0.0)
    doc = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert doc["frames"][0]["psnr"] == "inf" and doc["worst"]["psnr"] == "inf"


@pytest.mark.parametrize(
    "spec, names", [("all", [f"frame_{i}" for i in range(5)]), ("every:2", ["frame_0", "frame_2", "frame_4"])]
)
def test_regen_other_frame_specs(make_cfg, gt_dir, spec, names):
    frames = video(5)
    check_output("v", 2, True, "mp4", frames, VIDEO_T, make_cfg(regen=True, frames=spec))
    assert sorted(p.name for p in gt_dir.glob("*.png")) == sorted(f"v_2gpu_{n}.png" for n in names)
    assert check_output("v", 2, True, "mp4", frames, VIDEO_T, make_cfg(frames=spec)).status == "pass"


def test_image_media_is_written_verbatim(make_cfg, gt_dir):
    buf = io.BytesIO()
    Image.fromarray(scene(4)).save(buf, format="JPEG", quality=80)
    jpeg = buf.getvalue()
    decoded = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB"))
    check_output("img", 1, False, "jpg", [decoded], IMAGE_T, make_cfg(regen=True), media=jpeg)
    assert (gt_dir / "img_1gpu.jpg").read_bytes() == jpeg
    result = check_output("img", 1, False, "jpg", [decoded], IMAGE_T, make_cfg())
    assert result.status == "pass" and result.frames[0].label == ""


def test_mismatch_names_metric_frame_and_gt_files(make_cfg, gt_dir):
    frames = video(9)
    regen(make_cfg, frames=frames)
    changed = list(frames)
    changed[8] = noisy(frames[8], 40)
    with pytest.raises(ConsistencyFailure) as err:
        check_output("vid", 1, True, "mp4", changed, VIDEO_T, make_cfg())
    msg = str(err.value)
    assert msg.startswith("CONSISTENCY: case vid (1 GPU) differs from its ground truth: ")
    assert "ssim, psnr, mad on frame last" in msg
    assert "frame last (index 8): clip=" in msg and "FAIL: " in msg
    assert "frame 0 (index 0): clip=1.0000 ssim=1.0000 psnr=inf mad=0.0000  pass" in msg
    assert "clip >= 0.9, ssim >= 0.92, psnr >= 24, mad <= 10" in msg
    for name in ("vid_1gpu_frame_0.png", "vid_1gpu_frame_mid.png", "vid_1gpu_frame_last.png"):
        assert str(gt_dir / name) in msg
    result = err.value.result
    assert result.status == "fail" and result.reason == "mismatch"
    assert [f.failed for f in result.frames][:2] == [(), ()] and "ssim" in result.frames[2].failed


def test_each_threshold_applies_per_frame_in_its_direction(make_cfg):
    gt = scene(7)
    regen(make_cfg, case="img", frames=[gt], is_video=False)
    out = noisy(gt, 3)
    m = check_output("img", 1, False, "png", [out], Thresholds(-1, -1, 0, 255), make_cfg()).frames[0].metrics
    exact = Thresholds(clip=m.clip, ssim=m.ssim, psnr=m.psnr, mad=m.mad)
    assert check_output("img", 1, False, "png", [out], exact, make_cfg()).status == "pass"
    stricter = {"clip": m.clip + 1e-6, "ssim": m.ssim + 1e-6, "psnr": m.psnr + 1e-6, "mad": m.mad - 1e-6}
    for metric, value in stricter.items():
        t = Thresholds(**{**exact.__dict__, metric: value})
        with pytest.raises(ConsistencyFailure) as err:
            check_output("img", 1, False, "png", [out], t, make_cfg())
        assert err.value.result.frames[0].failed == (metric,)
        assert f": {metric} on the image" in str(err.value)


def test_metrics_match_pixel_metrics(make_cfg):
    gt = scene(8)
    regen(make_cfg, case="img", frames=[gt], is_video=False)
    out = noisy(gt, 5)
    got = check_output("img", 1, False, "png", [out], Thresholds(-1, -1, 0, 255), make_cfg()).frames[0].metrics
    want = pixel_metrics(out, gt, got.clip)
    assert (got.ssim, got.psnr, got.mad) == (want.ssim, want.psnr, want.mad)


def test_shape_mismatch_is_a_clear_failure(make_cfg, gt_dir):
    regen(make_cfg, frames=video(9))
    with pytest.raises(ConsistencyFailure) as err:
        check_output("vid", 1, True, "mp4", video(9, h=40), VIDEO_T, make_cfg())
    msg = str(err.value)
    assert err.value.result.reason == "shape"
    assert f"frame mid (index 4) is 64x40, its GT {gt_dir / 'vid_1gpu_frame_mid.png'} is 64x48" in msg
    assert "never resized" in msg


def test_missing_gt_lists_names_and_prepares_a_folder(make_cfg, gt_dir, tmp_path):
    frames = video(7)
    with pytest.raises(ConsistencyFailure) as err:
        check_output("new", 1, True, "mp4", frames, VIDEO_T, make_cfg(artifacts_dir=tmp_path / "art", platform="cpu"))
    msg = str(err.value)
    ready = tmp_path / "art" / "missing-gt"
    assert msg.startswith("CONSISTENCY: no ground truth for case new (1 GPU): ")
    assert "new_1gpu_frame_0.png, new_1gpu_frame_mid.png, new_1gpu_frame_last.png not found in" in msg
    assert str(ready) in msg and "--regen-ground-truth -k new" in msg
    assert err.value.result.reason == "missing-gt"
    for name, index in (("frame_0", 0), ("frame_mid", 3), ("frame_last", 6)):
        np.testing.assert_array_equal(np.asarray(Image.open(ready / f"new_1gpu_{name}.png")), frames[index])
    for f in ready.iterdir():  # copied in and recorded, they pass
        (gt_dir / f.name).write_bytes(f.read_bytes())
    manifest.rebuild(gt_dir)
    assert check_output("new", 1, True, "mp4", frames, VIDEO_T, make_cfg()).status == "pass"


def test_missing_gt_folder_without_artifacts_dir(make_cfg, tmp_path, monkeypatch):
    import tempfile

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    with pytest.raises(ConsistencyFailure) as err:
        check_output("img", 3, False, "png", [scene(1)], IMAGE_T, make_cfg())
    assert err.value.result.reason == "missing-gt"
    # a new private folder with an unpredictable name: nobody can plant a link in it first
    (folder,) = (tmp_path / "tmp").glob("diffperf-*")
    assert (folder / "missing-gt" / "img_3gpu.png").is_file() and folder.stat().st_mode & 0o777 == 0o700
    assert str(folder / "missing-gt") in str(err.value)


def test_tampered_gt_fails_integrity(make_cfg, gt_dir):
    frames = video(9)
    regen(make_cfg, frames=frames)
    target = gt_dir / "vid_1gpu_frame_mid.png"
    recorded = manifest.sha256(target.read_bytes())
    target.write_bytes(groundtruth.encode_png(frames[0]))
    with pytest.raises(ConsistencyFailure) as err:
        check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg())
    msg = str(err.value)
    assert msg.startswith("CONSISTENCY: ground-truth integrity check failed for case vid")
    assert str(target) in msg and recorded in msg and manifest.sha256(target.read_bytes()) in msg
    assert f"python -m pytest_diffperf.consistency record {gt_dir}" in msg and "--regen-ground-truth -k vid" in msg
    assert err.value.result.reason == "integrity"


def test_without_manifest_gt_is_read_unverified(make_cfg, gt_dir):
    frames = video(3)
    regen(make_cfg, frames=frames)
    (gt_dir / "manifest.json").unlink()
    result = check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg())
    assert result.status == "pass" and result.integrity.startswith("unverified: no manifest.json")


def test_platform_folder(make_cfg, gt_dir):
    frames = video(3)
    (gt_dir / "cpu").mkdir()
    (gt_dir / "cpu" / "vid_1gpu_frame_0.png").write_bytes(b"stale")
    done = regen(make_cfg, frames=frames, platform="cpu")  # regen writes where the check reads
    assert all(p.startswith(str(gt_dir / "cpu")) for p in done.gt_files)
    result = check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg(platform="cpu"))
    assert result.gt_files[0] == str(gt_dir / "cpu" / "vid_1gpu_frame_0.png")
    assert "cpu/vid_1gpu_frame_0.png" in json.loads((gt_dir / "manifest.json").read_text())["files"]


def test_skip_compares_nothing(make_cfg):
    result = check_output("vid", 1, True, "mp4", video(3), VIDEO_T, make_cfg(skip=True, skip_reason="X=1"))
    assert result.status == "skipped" and result.message == "X=1" and result.passed


def test_gt_embeddings_are_cached_and_frames_batched(make_cfg, gt_dir, monkeypatch):
    frames = video(9)
    regen(make_cfg, frames=frames)
    embedder = clip.get_embedder(make_cfg().clip_model, "none")
    batches: list[int] = []
    real = embedder.embed

    def embed(fs):
        batches.append(len(fs))
        return real(fs)

    monkeypatch.setattr(embedder, "embed", embed)
    check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg())
    assert batches == [6]  # 3 outputs + 3 GT frames, one batch
    assert len(list((gt_dir / ".clip-cache").glob("*.npy"))) == 3
    check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg())
    assert batches == [6, 3]  # GT embeddings read from the cache
    changed = list(frames)
    changed[4] = frames[5]
    regen(make_cfg, frames=changed)  # new GT content: its embedding is computed afresh
    check_output("vid", 1, True, "mp4", changed, VIDEO_T, make_cfg())
    assert batches == [6, 3, 4]


def test_artifacts_and_summary(make_cfg, tmp_path):
    art = tmp_path / "art"
    frames = video(9)
    regen(make_cfg, frames=frames)
    passed = check_output("vid", 1, True, "mp4", frames, VIDEO_T, make_cfg(artifacts_dir=art))
    changed = list(frames)
    changed[0] = noisy(frames[0], 30)
    with pytest.raises(ConsistencyFailure) as err:
        check_output("vid", 1, True, "mp4", changed, VIDEO_T, make_cfg(artifacts_dir=art))
    png, js = art / "consistency" / "vid_1gpu.png", art / "consistency" / "vid_1gpu.json"
    assert err.value.result.artifacts == [str(png), str(js)] and str(png) in str(err.value)
    with Image.open(png) as img:
        assert img.width >= 3 * 128 and img.height > 3 * 48
    doc = json.loads(js.read_text())
    assert doc["status"] == "fail" and doc["frames"][0]["failed"] and doc["thresholds"]["mad"] == 10.0
    path = write_summary([passed, err.value.result.to_dict()], art)
    summary = json.loads(path.read_text())
    assert summary["counts"] == {"pass": 1, "fail": 1} and len(summary["results"]) == 2
