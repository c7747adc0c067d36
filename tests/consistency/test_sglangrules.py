"""SGLang's ground-truth lookup read from each vendored release's test_utils.py: pins, aliases, order."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_diffperf.consistency.sglangrules import attempts, read_rules, regen_name, sglang_platform
from pytest_diffperf.errors import DiffperfError
from tests.support.paths import SGLANG_DATA


def rules_of(version: str):
    return read_rules(SGLANG_DATA / f"v{version}" / "src" / "sglang" / "multimodal_gen" / "test" / "test_utils.py")


def tried(rules, case_id, kind="image", fmt=None, platform="h100", npu=False, declared=frozenset(), n=1):
    groups = attempts(rules, case_id, n, kind, fmt, platform=platform, npu=npu, declared=declared)
    return [f"{a.subtree}/{name}" for a in groups for name in a.names]


@pytest.mark.parametrize(
    "version, generation, repo, revision, npu_revision",
    [
        ("0.5.12", "listed", "sgl-project/ci-data", "3ca3bad088ecc9ef80947d85c551cd335c75b87f", "3ca3bad0"),
        ("0.5.17", "case_map", "sgl-project/ci-data-diffusion", "d05810e3ea3eff1d137dec723f6e66d9c11b470f", "d180ad38"),
        ("0.5.23", "case_map", "sgl-project/ci-data-diffusion", "c7258eb56e9951878c66fc0fb3673d9f4775b0b2", "2173af2f"),
    ],
)
def test_each_release_s_pin_is_read_from_its_file(version, generation, repo, revision, npu_revision):
    rules = rules_of(version)
    assert rules.generation == generation
    assert rules.pin(False) == (repo, revision, "diffusion-ci/consistency_gt")
    pinned = rules.pin(True)
    assert pinned is not None and pinned[1].startswith(npu_revision)


def test_aliases_and_the_skip_list_arrive_with_0_5_17():
    assert dict(rules_of("0.5.12").aliases) == {}
    newer = rules_of("0.5.23")
    assert dict(newer.aliases) == {"fsdp-inference": "zimage_image_t2i_2_gpus"}
    assert "ltx_2_two_stage_t2v" in newer.skip_official
    assert rules_of("0.5.12").official_cases == {
        "ltx_2.3_one_stage_ti2v", "ltx_2.3_two_stage_t2v_2gpus", "ltx_2_3_two_stage_ti2v_2gpus"
    }  # fmt: skip


def test_0_5_23_image_order_platform_folder_official_first_extension_fallbacks():
    declared = frozenset({"c_1gpu.png"})
    assert tried(rules_of("0.5.23"), "c", fmt="png", platform="5090", declared=declared) == [
        "official_generated/5090/c_1gpu.png",  # the case map declares the name (its folder aside)
        "sglang_generated/5090/c_1gpu.png", "sglang_generated/5090/c_1gpu.jpg", "sglang_generated/5090/c_1gpu.webp",
        "official_generated/c_1gpu.png",
        "sglang_generated/c_1gpu.png", "sglang_generated/c_1gpu.jpg", "sglang_generated/c_1gpu.webp",
    ]  # fmt: skip


def test_0_5_23_npu_reads_ascend_first_without_a_platform_folder():
    declared = frozenset({"c_1gpu.jpg"})
    assert tried(rules_of("0.5.23"), "c", npu=True, declared=declared) == [
        "official_generated/ascend/c_1gpu.jpg",
        "sglang_generated/ascend/c_1gpu.jpg", "sglang_generated/ascend/c_1gpu.png", "sglang_generated/ascend/c_1gpu.webp",
        "official_generated/c_1gpu.jpg",
        "sglang_generated/c_1gpu.jpg", "sglang_generated/c_1gpu.png", "sglang_generated/c_1gpu.webp",
    ]  # fmt: skip
    assert tried(rules_of("0.5.23"), "flux_npu", fmt="png")[0] == "sglang_generated/ascend/flux_npu_1gpu.png"


def test_a_skip_listed_case_and_an_undeclared_video_never_read_official():
    rules = rules_of("0.5.23")
    assert not any("official" in t for t in tried(rules, "ltx_2_two_stage_t2v", declared=frozenset({"x"})))
    half = frozenset({"v_1gpu_frame_0.png"})  # a video's frames are declared all or none
    assert not any("official" in t for t in tried(rules, "v", kind="video", declared=half))


def test_0_5_12_official_only_for_its_listed_cases_and_no_platform_folder():
    rules = rules_of("0.5.12")
    assert tried(rules, "plain", fmt="png") == [f"sglang_generated/plain_1gpu.{e}" for e in ("png", "jpg", "webp")]
    frames = tried(rules, "ltx_2.3_one_stage_ti2v", kind="video")
    assert frames[0] == "official_generated/ltx_2.3_one_stage_ti2v_1gpu_frame_0.png" and len(frames) == 6


def test_audio_action_names_and_regeneration_names():
    rules = rules_of("0.5.23")
    assert (
        tried(rules, "fsdp-inference", kind="audio", n=2)[-1]
        == "sglang_generated/zimage_image_t2i_2_gpus_2gpu_audio.wav"
    )
    assert tried(rules, "pi", kind="action")[-1] == "sglang_generated/pi_1gpu.json"
    assert regen_name(rules, "fsdp-inference", 2, "image", "png", ("",)) == ["zimage_image_t2i_2_gpus_2gpu.png"]
    assert regen_name(rules, "fsdp-inference", 2, "action", "png", ("",)) == ["fsdp-inference_2gpu.json"]


def test_platform_names_as_sglang_has_them():
    assert sglang_platform("xpu_b60") == ("intel_xpu_b60", False)
    assert sglang_platform("cpu") == ("h100", False)  # SGLang's default off sm120, Blackwell and XPU
    assert sglang_platform("npu") == ("h100", True)


def test_a_file_without_a_source_is_one_clear_error(tmp_path: Path):
    bad = tmp_path / "test_utils.py"
    bad.write_text("X = 1\n")
    with pytest.raises(DiffperfError, match=r"test_utils.py: no consistency ground-truth source in this release"):
        read_rules(bad)
    bad.write_text("def (:\n")
    with pytest.raises(DiffperfError, match=r"test_utils.py: cannot read SGLang's test utilities"):
        read_rules(bad)
