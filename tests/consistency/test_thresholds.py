"""Consistency thresholds: layouts, platform merge at case granularity, defaults."""

from __future__ import annotations

import pytest

from pytest_diffperf.consistency.thresholds import (
    BUILTIN_DEFAULTS,
    AudioThresholds,
    Thresholds,
    load_thresholds,
    threshold_files,
)


def test_builtin_defaults():
    assert BUILTIN_DEFAULTS["image"] == Thresholds(clip=0.92, ssim=0.95, psnr=28.0, mad=8.0)
    assert BUILTIN_DEFAULTS["video"] == Thresholds(clip=0.90, ssim=0.92, psnr=24.0, mad=10.0)


def test_h100_alone(layout):
    t = load_thresholds(layout / "consistency_thresholds", "h100")
    assert t.files == [layout / "consistency_thresholds" / "h100.json"]
    # Case fields, then the file's default_ssim_threshold_image, then the built-in defaults.
    assert t.for_case("img_t2i", is_video=False) == Thresholds(clip=0.97, ssim=0.9, psnr=20.0, mad=8.0)
    assert t.for_case("vid_t2v", is_video=True) == Thresholds(clip=0.90, ssim=0.92, psnr=24.0, mad=12.0)
    assert t.for_case("unknown", is_video=False) == Thresholds(clip=0.92, ssim=0.9, psnr=28.0, mad=8.0)


@pytest.mark.parametrize("path", ["consistency_thresholds", "", "consistency_thresholds/b200.json"])
def test_platform_file_merged_over_h100(layout, path):
    t = load_thresholds(layout / path, "b200" if not path.endswith(".json") else None)
    assert [p.name for p in t.files] == ["h100.json", "b200.json"]
    # The B200 entry replaces H100's whole entry: clip falls back to the default, not to 0.97.
    assert t.for_case("img_t2i", is_video=False) == Thresholds(clip=0.92, ssim=0.8, psnr=28.0, mad=8.0)
    assert t.for_case("vid_t2v", is_video=True) == Thresholds(clip=0.90, ssim=0.92, psnr=20.0, mad=12.0)
    assert t.source["img_t2i"].name == "b200.json" and t.source["vid_t2v"].name == "h100.json"
    assert t.cases["other"].audio_spectral_similarity_threshold == 0.9  # SGLang's audio check reads it
    assert t.audio_for_case("other") == AudioThresholds(spectral=0.9)


@pytest.mark.parametrize("hardware", ["npu", "musa", "cpu", "5090"])
def test_platform_without_its_own_file_uses_h100(layout, hardware):
    assert threshold_files(layout / "consistency_thresholds", hardware) == [
        layout / "consistency_thresholds" / "h100.json"
    ]


def test_xpu_uses_sglangs_file_name(write):
    write("consistency_thresholds/h100.json", {"cases": {"a": {"clip_threshold": 0.5}}})
    write("consistency_thresholds/intel_xpu_b60.json", {"cases": {"a": {"ssim_threshold": 0.5}}})
    t = load_thresholds(write("x", "").parent / "consistency_thresholds", "xpu_b60")
    assert t.for_case("a", is_video=False) == Thresholds(clip=0.92, ssim=0.5, psnr=28.0, mad=8.0)


def test_single_file_layout(single):
    for path in (single, single / "consistency_threshold.json"):
        t = load_thresholds(path)
        assert t.for_case("img_t2i", is_video=False).clip == 0.95
