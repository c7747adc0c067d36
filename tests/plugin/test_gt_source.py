"""``--diffperf-gt-dir``'s sources in the forms users write them: ini and command line, a remote source kept
as given, a relative clone from another folder; the header names each. A dry run: nothing starts or fetches."""

from __future__ import annotations

import pytest

from tests.support.sglang import VENDORED, available
from tests.support.suite import GENEROUS, tiny_case

REV = "d" * 40
CLIP = ["--diffperf-clip-model=diffperf-tiny", "--diffperf-clip-pretrained=none", "--diffperf-dry-run"]


@pytest.fixture
def args(pytester, suite, monkeypatch):
    monkeypatch.setenv("DIFFPERF_GT_CACHE", str(pytester.path / "cache"))
    monkeypatch.setenv("DIFFPERF_GT_RAW_BASE", "http://127.0.0.1:9")  # never reached: a dry run compares nothing
    return suite([tiny_case("img")], {"img": GENEROUS}) + CLIP


def test_a_github_source_from_the_ini_file_is_kept_as_given(pytester, args):
    pytester.makeini(f"[pytest]\ndiffperf_gt_dir = github:sgl-project/ci-data-diffusion@{REV}\n")
    ran = pytester.runpytest(*args)
    ran.assert_outcomes(skipped=1)
    cache = pytester.path / "cache" / "sgl-project" / "ci-data-diffusion" / REV / "diffusion-ci" / "consistency_gt"
    ran.stdout.fnmatch_lines(
        [f"diffperf: consistency=GT github:sgl-project/ci-data-diffusion@{REV}:diffusion-ci/consistency_gt (given;"
         f" the newest lookup: case_map, h100/ first; cached in {cache}), CLIP diffperf-tiny/none*"]
    )  # fmt: skip
    assert not (pytester.path / "cache").exists()  # nothing fetched before a case is compared


def test_a_url_on_the_command_line_wins_over_the_ini_file(pytester, args):
    pytester.makeini("[pytest]\ndiffperf_gt_dir = gt\n")
    ran = pytester.runpytest(*args, "--diffperf-gt-dir=https://mirror.example/ci/diffusion-ci/consistency_gt/")
    ran.assert_outcomes(skipped=1)
    ran.stdout.fnmatch_lines(
        ["diffperf: consistency=GT https://mirror.example/ci/diffusion-ci/consistency_gt (given;*"]
    )


def test_a_relative_clone_from_another_folder_is_read_by_sglang_s_lookup(pytester, args):
    (pytester.path / "data" / "consistency_gt" / "sglang_generated").mkdir(parents=True)
    sub = pytester.mkdir("sub")
    moved = [
        a.replace("=", "=../", 1) if a.startswith(("--diffperf-baselines=", "--diffperf-cases=")) else a for a in args
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(sub)
        ran = pytester.runpytest(*moved, "--diffperf-gt-dir", "../data/consistency_gt", f"--rootdir={pytester.path}")
    ran.assert_outcomes(skipped=1)
    clone = pytester.path / "data" / "consistency_gt"
    ran.stdout.fnmatch_lines([f"diffperf: consistency=GT {clone} (a local data-repository tree; the newest lookup:*"])


@pytest.mark.skipif(not available(), reason="the vendored SGLang files are absent")
@pytest.mark.parametrize(
    "release, baselines, pin",
    [
        ("v0.5.23", "perf_baselines", "sgl-project/ci-data-diffusion@c7258eb56e9951878c66fc0fb3673d9f4775b0b2"),
        ("v0.5.12", "perf_baselines.json", "sgl-project/ci-data@3ca3bad088ecc9ef80947d85c551cd335c75b87f"),
    ],
)
def test_sglang_reads_the_pin_of_the_case_lists_release(pytester, monkeypatch, release, baselines, pin):
    monkeypatch.setenv("DIFFPERF_GT_CACHE", str(pytester.path / "cache"))
    tree = VENDORED.parent / release
    ran = pytester.runpytest(
        "--diffperf=pr_test", f"--diffperf-baselines={tree / baselines}", f"--diffperf-cases={tree / 'src'}",
        "--diffperf-hardware=h100", "--diffperf-gt-dir=sglang", *CLIP, "-k", "hunyuan3d_shape_gen",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    ran.assert_outcomes(skipped=1)
    utils = tree / "src" / "sglang" / "multimodal_gen" / "test" / "test_utils.py"
    lookup = "case_map, h100/ first" if release == "v0.5.23" else "listed, no platform folder"
    ran.stdout.fnmatch_lines(
        [f"diffperf: consistency=GT github:{pin}:diffusion-ci/consistency_gt (the pin of SGLang's test_utils.py; "
         f"the lookup of {utils}: {lookup}; cached in *"]
    )  # fmt: skip
