"""Output consistency through the plugin: ground truth regenerated, then compared, on real servers."""

from __future__ import annotations

import json
import re
import tempfile

import pytest

from tests.support.gtserver import GT_PATH, DataRepo, serving
from tests.support.suite import GENEROUS, results, tiny_case

pytestmark = pytest.mark.server  # starts server processes

CLIP = ["--diffperf-gt-dir=gt", "--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none"]


def video_case(case_id: str, serve_args: str = "") -> dict:
    return tiny_case(
        case_id, serve_args, model="tiny/wan-t2v", task="text-to-video", num_frames=5, fps=4, num_inference_steps=2
    )


def test_regenerated_ground_truth_passes_and_noisy_outputs_fail_naming_metric_and_frame(pytester, suite):
    cases = [tiny_case("img"), video_case("vid")]
    args = suite(cases, {"img": GENEROUS, "vid": GENEROUS}) + CLIP
    regen = pytester.runpytest(*args, "--regen-ground-truth")
    regen.assert_outcomes(passed=2)
    gt = pytester.path / "gt"
    assert sorted(p.name for p in gt.iterdir() if p.is_file()) == [
        ".manifest.json.lock",  # the manifest's lock, beside it (git-ignored)
        "img_1gpu.jpg", "manifest.json", "vid_1gpu_frame_0.png", "vid_1gpu_frame_last.png", "vid_1gpu_frame_mid.png"
    ]  # fmt: skip

    same = pytester.runpytest(*args, "--junitxml=junit.xml", "--diffperf-artifacts=art")
    same.assert_outcomes(passed=2)
    same.stdout.fnmatch_lines(["diffperf: consistency=GT *gt*CLIP diffperf-tiny/none, frames first,mid,last"])
    doc = results(pytester)
    statuses = {s["scenario"]: s["consistency"]["status"] for s in doc["scenarios"]}
    assert statuses == {"img": "pass", "vid": "pass"}
    assert [f["label"] for f in doc["scenarios"][1]["consistency"]["frames"]] == [
        "0",
        "mid",
        "last",
    ]  # SGLang's GT names: _frame_0, _frame_mid, _frame_last
    junit = (pytester.path / "junit.xml").read_text()
    assert '<property name="diffperf_consistency[vid]" value="pass"' in junit
    summary = json.loads((pytester.path / "art" / "consistency" / "summary.json").read_text())
    assert summary["counts"] == {"pass": 2}

    noisy = [tiny_case("img", "--inject-output-noise 0.1"), video_case("vid", "--inject-output-noise 0.1")]
    args = suite(noisy, {"img": GENEROUS, "vid": GENEROUS}) + CLIP
    failed = pytester.runpytest(*args)
    failed.assert_outcomes(failed=2)
    out = failed.stdout.str()
    assert out.count("CONSISTENCY:") >= 2 and "PERFORMANCE:" not in out
    assert "img_1gpu.jpg" in out and "vid_1gpu_frame_mid.png" in out  # JPEG: the default image format
    assert "psnr" in out and "frame" in out
    # the verdict first, the metric, its value and the frame; the ground-truth command, never the baselines'
    assert re.search(r"^FAILED \S+::vid - output differs from its ground truth: \w+", out, re.M), out  # at 80 columns
    assert re.search(r"output: \w+ [\d.]+ \(needs [<>]= [\d.]+\) on frame \w+ \(index \d\)", out), out
    assert re.search(r"if the output change is intended:\s+pytest --regen-ground-truth .*--diffperf-gt-dir=gt .*-k img",
                     out), out  # fmt: skip
    assert "--regen-baselines" not in out[out.index("not passed:") :]  # (the header may name it for timings)
    doc = results(pytester)
    assert [s["verdict"] for s in doc["scenarios"]] == ["pass", "pass"]  # the performance was fine
    assert [s["outcome"] for s in doc["scenarios"]] == ["fail", "fail"]  # the outputs were not
    judged = {(s["consistency"]["status"], s["consistency"]["reason"]) for s in doc["scenarios"]}
    assert judged == {("fail", "mismatch")}


def test_missing_ground_truth_names_the_files_and_skip_switch_is_reported(pytester, suite, monkeypatch):
    (pytester.path / "gt").mkdir()
    (pytester.path / "tmp").mkdir()  # the outputs to copy go to a new temp folder (no artifacts folder): here
    monkeypatch.setattr(tempfile, "tempdir", str(pytester.path / "tmp"))
    args = suite([tiny_case("img")], {"img": GENEROUS}) + CLIP
    missing = pytester.runpytest(*args)
    missing.assert_outcomes(failed=1)
    out = missing.stdout.str()
    assert "CONSISTENCY:" in out and "img_1gpu.jpg" in out and "missing-gt" in out

    monkeypatch.setenv("SGLANG_SKIP_CONSISTENCY", "1")
    skipped = pytester.runpytest(*args)
    skipped.assert_outcomes(passed=1)
    skipped.stdout.fnmatch_lines(["diffperf: consistency=skipped (SGLANG_SKIP_CONSISTENCY=1)"])
    assert results(pytester)["scenarios"][0]["consistency"]["status"] == "skipped"


def test_ground_truth_of_a_data_repository_over_http_then_from_its_cache(pytester, suite, monkeypatch):
    """Regenerated into a clone (sglang_generated/, SGLang's names), served as raw.githubusercontent.com serves a
    revision, compared; then compared again with the server stopped (the cache)."""
    repo_name, revision = "sgl-project/ci-data-diffusion", "c" * 40
    clone = pytester.path / "clone"
    (clone / "sglang_generated").mkdir(parents=True)
    args = suite([tiny_case("img")], {"img": GENEROUS}) + CLIP[1:]
    pytester.runpytest(*args, "--diffperf-gt-dir=clone", "--regen-ground-truth").assert_outcomes(passed=1)
    written = clone / "sglang_generated" / "img_1gpu.jpg"
    repo = DataRepo(pytester.path / "served")
    repo.put(repo_name, revision, "sglang_generated/img_1gpu.jpg", written.read_bytes())
    monkeypatch.setenv("DIFFPERF_GT_CACHE", str(pytester.path / "cache"))
    monkeypatch.setenv("DIFFPERF_GT_BACKOFF_S", "0.01")
    source = f"--diffperf-gt-dir=github:{repo_name}@{revision}"
    with serving(repo):
        monkeypatch.setenv("DIFFPERF_GT_RAW_BASE", repo.url)
        online = pytester.runpytest(*args, source)
        online.assert_outcomes(passed=1)
    online.stdout.fnmatch_lines([f"diffperf: consistency=GT github:{repo_name}@{revision}:{GT_PATH} (given; *"])
    assert repo.got(f"/{GT_PATH}/sglang_generated/img_1gpu.jpg") == 1
    offline = pytester.runpytest(*args, source)
    offline.assert_outcomes(passed=1)
    compared = results(pytester)["scenarios"][0]["consistency"]
    cached = pytester.path / "cache" / repo_name / revision / GT_PATH / "sglang_generated" / "img_1gpu.jpg"
    assert (compared["status"], compared["integrity"], compared["gt_files"]) == ("pass", "verified", [str(cached)])
