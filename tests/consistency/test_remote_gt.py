"""SGLang's ground truth from a data repository served over HTTP on 127.0.0.1 (as raw.githubusercontent.com
serves it): official before sglang-generated, platform folders, aliases, retries, the cache, revisions."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_diffperf.consistency.check import check_output
from pytest_diffperf.consistency.config import validate_config
from pytest_diffperf.consistency.gtlookup import SGLangGT, open_source
from pytest_diffperf.consistency.gtsource import parse_gt_source
from pytest_diffperf.consistency.result import ConsistencyFailure
from pytest_diffperf.consistency.sglangrules import read_rules
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.platforms import Platform
from tests.support.gitrepo import commit, init
from tests.support.gtserver import GT_PATH, DataRepo, serving
from tests.support.paths import SGLANG_DATA

from .synth import IMAGE_T, scene

REPO = "sgl-project/ci-data-diffusion"
REV = "a" * 40
REV2 = "b" * 40
RULES_0523 = read_rules(SGLANG_DATA / "v0.5.23" / "src" / "sglang" / "multimodal_gen" / "test" / "test_utils.py")


def png(frame: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="PNG")
    return buf.getvalue()


OFFICIAL, SGLANG, PLATFORM, ALIASED = scene(1), scene(2), scene(3), scene(4)


@pytest.fixture
def data_repo(tmp_path: Path):
    repo = DataRepo(tmp_path / "served")
    for rev in (REV, REV2):
        repo.case_map(REPO, rev, {"c1": ["c1_1gpu.png"]})
        repo.put(REPO, rev, "sglang_generated/c2_1gpu.png", png(SGLANG))
        repo.put(REPO, rev, "sglang_generated/h100/c2_1gpu.png", png(PLATFORM))
        repo.put(REPO, rev, "sglang_generated/zimage_image_t2i_2_gpus_2gpu.jpg", png(ALIASED))
        repo.put(REPO, rev, "sglang_generated/c1_1gpu.png", png(SGLANG))
    repo.put(REPO, REV, "official_generated/c1_1gpu.png", png(OFFICIAL))
    repo.put(REPO, REV2, "official_generated/c1_1gpu.png", png(scene(5)))
    with serving(repo):
        yield repo


def env_of(repo: DataRepo, tmp_path: Path) -> dict[str, str]:
    return {
        "DIFFPERF_GT_RAW_BASE": repo.url,
        "DIFFPERF_GT_CACHE": str(tmp_path / "cache"),
        "DIFFPERF_GT_BACKOFF_S": "0.01",
    }


def opened(env: dict[str, str], rev: str = REV, hardware: Platform = "h100") -> SGLangGT:
    _, sglang = open_source(parse_gt_source(f"github:{REPO}@{rev}"), RULES_0523, hardware, env)
    assert sglang is not None
    return sglang


def pixels(path: Path | None) -> np.ndarray:
    assert path is not None
    return np.asarray(Image.open(path).convert("RGB"))


def test_the_official_file_wins_and_the_check_reads_it_verified(data_repo, tmp_path, make_cfg):
    sglang = opened(env_of(data_repo, tmp_path))
    located = sglang.locate("c1", 1, "image", "png", ("",))
    assert located.files[0] == sglang.tree.root / "official_generated" / "c1_1gpu.png"
    np.testing.assert_array_equal(pixels(located.files[0]), OFFICIAL)
    result = check_output("c1", 1, False, "png", [OFFICIAL], IMAGE_T, make_cfg(gt_dir=sglang.tree.root, sglang=sglang))
    assert result.status == "pass" and result.integrity == "verified"
    assert result.gt_files == [str(sglang.tree.root / "official_generated" / "c1_1gpu.png")]


def test_platform_folder_first_and_case_aliases(data_repo, tmp_path):
    sglang = opened(env_of(data_repo, tmp_path))
    np.testing.assert_array_equal(pixels(sglang.locate("c2", 1, "image", "png", ("",)).files[0]), PLATFORM)
    found = sglang.locate("fsdp-inference", 2, "image", None, ("",)).files[0]  # unset format: jpg first
    assert found is not None and found.name == "zimage_image_t2i_2_gpus_2gpu.jpg"
    b200 = opened(env_of(data_repo, tmp_path), hardware="b200")  # no b200/ folder: the root's file
    np.testing.assert_array_equal(pixels(b200.locate("c2", 1, "image", "png", ("",)).files[0]), SGLANG)


@pytest.mark.parametrize("fault", ["404", "429", "503", "truncate"])
def test_a_transient_failure_is_retried(data_repo, tmp_path, fault):
    url_path = f"/{REPO}/{REV}/{GT_PATH}/official_generated/c1_1gpu.png"
    data_repo.fault(url_path, fault)
    located = opened(env_of(data_repo, tmp_path)).locate("c1", 1, "image", "png", ("",))
    np.testing.assert_array_equal(pixels(located.files[0]), OFFICIAL)
    assert data_repo.got(url_path) == 2


def test_a_persistent_failure_is_one_error_naming_the_url_and_the_case(data_repo, tmp_path):
    url_path = f"/{REPO}/{REV}/{GT_PATH}/official_generated/c1_1gpu.png"
    data_repo.fault(url_path, "always-429")
    with pytest.raises(DiffperfError) as err:
        opened(env_of(data_repo, tmp_path)).locate("c1", 1, "image", "png", ("",))
    assert str(err.value).startswith(f"{data_repo.url}{url_path}: ground truth of case c1 could not be fetched")
    assert "after 5 tries (last: HTTP 429)" in str(err.value)
    assert data_repo.got(url_path) == 5


def test_the_cache_serves_a_second_run_with_the_server_stopped(tmp_path, make_cfg):
    repo = DataRepo(tmp_path / "served")
    repo.case_map(REPO, REV, {"c1": ["c1_1gpu.png"]})
    repo.put(REPO, REV, "official_generated/c1_1gpu.png", png(OFFICIAL))
    with serving(repo):
        env = env_of(repo, tmp_path)
        first = opened(env).locate("c1", 1, "image", "png", ("",)).files
    again = opened(env)  # a new run: the server is gone
    assert again.locate("c1", 1, "image", "png", ("",)).files == first
    result = check_output("c1", 1, False, "png", [OFFICIAL], IMAGE_T, make_cfg(gt_dir=again.tree.root, sglang=again))
    assert result.status == "pass" and result.integrity == "verified"


def test_a_changed_revision_fetches_anew(data_repo, tmp_path):
    env = env_of(data_repo, tmp_path)
    old = opened(env).locate("c1", 1, "image", "png", ("",)).files[0]
    new = opened(env, REV2).locate("c1", 1, "image", "png", ("",)).files[0]
    assert old != new and REV2 in str(new)
    np.testing.assert_array_equal(pixels(new), scene(5))
    assert data_repo.got(f"/{REV2}/{GT_PATH}/official_generated/c1_1gpu.png") == 1


def test_missing_ground_truth_names_every_candidate_tried(data_repo, tmp_path, make_cfg):
    sglang = opened(env_of(data_repo, tmp_path))
    cfg = make_cfg(gt_dir=sglang.tree.root, sglang=sglang, artifacts_dir=tmp_path / "art")
    with pytest.raises(ConsistencyFailure) as err:
        check_output("nope", 1, False, "png", [SGLANG], IMAGE_T, cfg)
    base = f"{data_repo.url}/{REPO}/{REV}/{GT_PATH}/sglang_generated"
    tried = [f"{base}/h100/nope_1gpu.{e}" for e in ("png", "jpg", "webp")]
    tried += [f"{base}/nope_1gpu.{e}" for e in ("png", "jpg", "webp")]
    message = str(err.value)
    assert message.index(tried[0]) < message.index(tried[3]) < message.index(tried[5])
    assert all(url in message for url in tried) and "official_generated" not in message
    assert "add them to the data repository's sglang_generated/" in message
    assert (tmp_path / "art" / "missing-gt" / "sglang_generated" / "nope_1gpu.png").is_file()
    assert f"ready under SGLang's names in {tmp_path / 'art' / 'missing-gt' / 'sglang_generated'}" in message


def test_the_release_pin_and_the_npu_pin(tmp_path):
    repo = DataRepo(tmp_path / "served")
    cuda, npu = "c7258eb56e9951878c66fc0fb3673d9f4775b0b2", "2173af2fe762e2c95e18b06d017604d520196eff"
    repo.put(REPO, cuda, "sglang_generated/c3_1gpu.png", png(SGLANG))
    repo.put(REPO, npu, "sglang_generated/ascend/c3_1gpu.png", png(PLATFORM))
    repo.put(REPO, npu, "sglang_generated/c3_1gpu.png", png(SGLANG))
    with serving(repo):
        env = env_of(repo, tmp_path)
        pinned = parse_gt_source("sglang")
        _, on_cuda = open_source(pinned, RULES_0523, "h100", env)
        _, on_npu = open_source(pinned, RULES_0523, "npu", env)
        assert on_cuda is not None and on_npu is not None
        assert on_cuda.tree.label == f"github:{REPO}@{cuda}:{GT_PATH}"
        assert "pin of" in on_cuda.describe() and "NPU pin" in on_npu.describe()
        np.testing.assert_array_equal(pixels(on_cuda.locate("c3", 1, "image", "png", ("",)).files[0]), SGLANG)
        np.testing.assert_array_equal(pixels(on_npu.locate("c3", 1, "image", "png", ("",)).files[0]), PLATFORM)


def test_a_bad_backoff_is_one_clear_error(tmp_path):
    with pytest.raises(DiffperfError, match=r"^DIFFPERF_GT_BACKOFF_S: .*'soon'"):
        opened({"DIFFPERF_GT_CACHE": str(tmp_path), "DIFFPERF_GT_BACKOFF_S": "soon"})


def test_pinned_source_without_sglang_case_lists_is_one_clear_error(tmp_path):
    with pytest.raises(DiffperfError, match=r"^--diffperf-gt-dir: sglang reads the ground-truth pin of the case"):
        open_source(parse_gt_source("sglang"), None, "h100", {"DIFFPERF_GT_CACHE": str(tmp_path)})


def test_regeneration_into_a_remote_source_is_refused(tmp_path, make_cfg):
    env = {"DIFFPERF_GT_CACHE": str(tmp_path / "cache"), "DIFFPERF_GT_RAW_BASE": "http://127.0.0.1:9"}
    sglang = opened(env)
    with pytest.raises(DiffperfError, match="--regen-ground-truth writes into a local folder, not into github:"):
        validate_config(make_cfg(gt_dir=sglang.tree.root, sglang=sglang, regen=True))
    assert not (tmp_path / "cache").exists()


def test_regeneration_into_a_data_repository_clone_writes_sglang_generated(tmp_path, make_cfg):
    clone = tmp_path / "consistency_gt"
    (clone / "sglang_generated").mkdir(parents=True)
    _, sglang = open_source(parse_gt_source(str(clone)), RULES_0523, "h100", {})
    assert sglang is not None and sglang.tree.fetcher is None
    media = png(ALIASED)
    done = check_output(
        "fsdp-inference", 2, False, "png", [ALIASED], IMAGE_T, make_cfg(gt_dir=clone, sglang=sglang, regen=True),
        media=media,
    )  # fmt: skip
    written = clone / "sglang_generated" / "zimage_image_t2i_2_gpus_2gpu.png"
    assert done.gt_files == [str(written)] and written.read_bytes() == media
    assert sorted(p.name for p in clone.iterdir()) == ["sglang_generated"]  # no manifest: the PR holds GT files only
    result = check_output("fsdp-inference", 2, False, "png", [ALIASED], IMAGE_T, make_cfg(gt_dir=clone, sglang=sglang))
    assert result.status == "pass" and result.integrity.startswith("unverified: no manifest.json")


def test_a_clone_off_the_release_s_pin_is_named_stale_in_the_header(tmp_path):
    clone = init(tmp_path / "ci-data-diffusion")
    gt = clone / GT_PATH
    (gt / "sglang_generated").mkdir(parents=True)
    (gt / "sglang_generated" / "c_1gpu.png").write_bytes(png(SGLANG))
    head = commit(clone, "gt")
    _, stale = open_source(parse_gt_source(str(gt)), RULES_0523, "h100", {})
    assert stale is not None and stale.tree.fetcher is None
    assert (
        f"a local data-repository tree at {head[:12]}, NOT the release's pin c7258eb56e99 of {REPO}" in stale.describe()
    )
    assert f"git -C {clone} fetch origin c7258eb56e9951878c66fc0fb3673d9f4775b0b2" in stale.describe()
    pinned = dataclasses.replace(RULES_0523, root_url=f"https://raw.githubusercontent.com/{REPO}/{head}/{GT_PATH}")
    _, current = open_source(parse_gt_source(str(gt)), pinned, "h100", {})
    assert current is not None and f"at the release's pin {head[:12]}" in current.describe()
    _, plain = open_source(parse_gt_source(str(gt)), None, "h100", {})  # JSON cases: no pin to hold it to
    assert plain is not None and "pin" not in plain.describe()
