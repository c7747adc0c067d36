"""A run that judged nothing is not green: every scenario skipped or deselected says so and exits 5, unless
``--diffperf-allow-empty``; a ``-k`` that selects no scenario names the closest ones. Nothing starts a server."""

from __future__ import annotations

import json

import pytest

from pytest_diffperf.cli import main
from tests.support.suite import GENEROUS, results, tiny_case

NOTHING = "diffperf: nothing was judged: "


@pytest.fixture
def two_gpu_suite(suite, monkeypatch):
    """Every scenario needs 2 devices; the run has 1 (a wrong runner label)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    cases = [tiny_case("flux_tiny_t2i", num_gpus=2), tiny_case("wan_tiny_t2v", num_gpus=2, seed=2)]
    return suite(cases, {c["id"]: GENEROUS for c in cases})


def test_every_scenario_skipped_is_not_green(pytester, two_gpu_suite):
    result = pytester.runpytest(*two_gpu_suite)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "2 scenarios: 2 skipped",
            f"{NOTHING}every scenario skipped (2 needs 2 devices); pass --diffperf-allow-empty if that is expected",
        ]
    )
    assert {s["verdict"] for s in results(pytester)["scenarios"]} == {"skipped"}  # the file is still written


@pytest.mark.parametrize("how", ["option", "ini"])
def test_allow_empty_passes_and_still_says_so(pytester, two_gpu_suite, how):
    if how == "ini":
        pytester.makeini("[pytest]\ndiffperf_allow_empty = true\n")
    result = pytester.runpytest(*two_gpu_suite, *(["--diffperf-allow-empty"] if how == "option" else []))
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [f"{NOTHING}every scenario skipped (2 needs 2 devices) (allowed: --diffperf-allow-empty)"]
    )


def test_a_k_that_selects_no_scenario_names_the_closest(pytester, two_gpu_suite):
    result = pytester.runpytest(*two_gpu_suite, "-k", "flux_tny_t2i or wan")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(["*1 deselected*"])  # wan was selected, and skipped
    result = pytester.runpytest(*two_gpu_suite, "-k", "flux_tny_t2i and not wan")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            f"{NOTHING}no scenario selected; -k: no scenario name contains 'flux_tny_t2i'; did you mean: "
            "flux_tiny_t2i; pass --diffperf-allow-empty if that is expected"
        ]
    )
    result = pytester.runpytest(*two_gpu_suite, "-k", "zzz", "--diffperf-allow-empty")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            f"{NOTHING}no scenario selected; -k: no scenario name contains 'zzz'; known: flux_tiny_t2i, wan_tiny_t2v "
            "(allowed: --diffperf-allow-empty)"
        ]
    )


def test_collect_only_and_a_dry_run_keep_their_exit_status(pytester, two_gpu_suite):
    assert pytester.runpytest(*two_gpu_suite, "--co").ret == pytest.ExitCode.OK
    result = pytester.runpytest(*two_gpu_suite, "--diffperf-dry-run")
    assert result.ret == pytest.ExitCode.OK  # nothing judged, as asked
    assert NOTHING not in result.stdout.str()


def test_a_merge_of_runs_that_judged_nothing_is_not_green(pytester, two_gpu_suite, capsys, tmp_path, monkeypatch):
    pytester.runpytest(*two_gpu_suite)
    files = [str(pytester.path / "results.json")]
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["merge", *files]) == 5
    out = capsys.readouterr().out
    assert "diffperf merge: nothing was judged: every scenario skipped (2 needs 2 devices); pass --allow-empty" in out
    title = summary.read_text().splitlines()[0]
    assert title == "### ⏭️ diffperf: nothing judged (2 scenarios: 2 skipped): profile `pr_test` on `cpu`"
    assert "✅" not in summary.read_text()
    assert main(["merge", *files, "--allow-empty"]) == 0
    assert "(allowed: --allow-empty)" in capsys.readouterr().out
    doc = json.loads((pytester.path / "results.json").read_text())
    doc["scenarios"][0] |= {"verdict": "pass", "outcome": "pass"}  # one judged scenario is enough
    (pytester.path / "results.json").write_text(json.dumps(doc))
    assert main(["merge", *files]) == 0
    assert "nothing was judged" not in capsys.readouterr().out
