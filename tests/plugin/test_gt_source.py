"""``--diffperf-gt-dir``'s sources in the forms users write them: ini and command line, a remote source kept
as given, a relative clone from another folder; the header names each. A dry run: nothing starts or fetches."""

from __future__ import annotations

import pytest

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
