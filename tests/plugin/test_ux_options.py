"""The reporting and regeneration options' user errors, the case file's lint in the header, and the
two-word path option pytest reads as a test path: each said in one line, before any server starts."""

from __future__ import annotations

import json

import pytest

from tests.support.suite import GENEROUS, refservers, tiny_case


@pytest.fixture
def args(suite):
    return suite([tiny_case("a")], {"a": GENEROUS})


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--diffperf-html=."], "diffperf: --diffperf-html: * is a folder; expected a file path"),
        (["--diffperf-history=cases.json"], "diffperf: --diffperf-history: * is a file; expected a folder"),
        (
            ["--diffperf-compare-to=last"],
            "diffperf: --diffperf-compare-to: 'last' is the latest run of --diffperf-history: set it too",
        ),
        (
            ["--diffperf-compare-to=last", "--diffperf-history=hist"],
            "diffperf: --diffperf-compare-to: no earlier run in the history *hist",
        ),
        (["--diffperf-compare-to=nothere.json"], "diffperf: *nothere.json*"),
        (["--diffperf-log-tail=-3"], "diffperf: --diffperf-log-tail: expected an integer >= 0, got '-3'"),
        (["--diffperf-progress-every=0"], "diffperf: --diffperf-progress-every: *"),
    ],
)
def test_user_errors(pytester, args, extra, message):
    result = pytester.runpytest(*args, *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str() and not refservers()
    assert not (pytester.path / "results.json").exists()


def test_case_file_typo_is_named_in_the_header(pytester, suite):
    args = suite([tiny_case("a", perf_repeat_request=3)], {"a": GENEROUS})
    result = pytester.runpytest(*args, "--co")
    result.stdout.fnmatch_lines(
        [
            "diffperf: warning: case file *cases.json: 1 problem(s) (cases.0.perf_repeat_request: unknown key; "
            "did you mean: perf_repeat_requests); see: diffperf lint *cases.json"
        ]
    )


def test_a_two_word_path_option_is_named_when_pytest_loses_the_ini_file(pytester, suite, tmp_path_factory):
    suite([tiny_case("a")], {"a": GENEROUS})
    pytester.makeini("[pytest]\ndiffperf_baselines = baselines.json\ndiffperf_server = reference\n")
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "cases.json"
    elsewhere.write_text((pytester.path / "cases.json").read_text())
    result = pytester.runpytest("--diffperf=pr_test", "--diffperf-cases", str(elsewhere), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: diffperf: --diffperf: needs a baseline file*",
            f"diffperf: note: pytest took {elsewhere} for test path(s) when it chose the rootdir (*, ini file: none): "
            f"write --diffperf-cases={elsewhere} (with '=')",
        ]
    )
    fixed = pytester.runpytest("--diffperf=pr_test", f"--diffperf-cases={elsewhere}", "-p", "no:cacheprovider", "--co")
    fixed.stdout.fnmatch_lines(["*1 test collected*"])
    assert "diffperf: warning: pytest took" not in fixed.stdout.str()


def test_regeneration_refuses_another_platforms_file(pytester, suite):
    suite([tiny_case("a")], {"a": GENEROUS})
    folder = pytester.path / "perf_baselines"
    folder.mkdir()
    h100 = json.loads((pytester.path / "baselines.json").read_text()) | {"metadata": {"hardware": "h100"}}
    (folder / "h100.json").write_text(json.dumps(h100))
    before = (folder / "h100.json").read_bytes()
    result = pytester.runpytest(
        "--regen-baselines",
        f"--diffperf-baselines={folder}",
        "--diffperf-hardware=h100",
        "--diffperf-cases=cases.json",
        "--diffperf-server=reference",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: diffperf: --regen-baselines: refusing to regenerate: {folder / 'h100.json'} holds h100 figures, "
            "and this run measures on * (cpu); regenerate on h100 hardware, or pass --regen-force to write these "
            "figures anyway"
        ]
    )
    assert (folder / "h100.json").read_bytes() == before and not refservers()
