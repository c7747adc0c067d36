"""Plugin options and collection, without starting servers: what a user types and sees."""

from __future__ import annotations

import json

import pytest

from tests.support.suite import GENEROUS, tiny_case

pytestmark = pytest.mark.server  # starts server processes


def test_sglang_h100_file_collects_84_tests_named_by_key(pytester, sglang_data):
    (pytester.path / "cases.json").write_text(json.dumps({"cases": [tiny_case("flux_image_t2i")]}))
    result = pytester.runpytest(
        "--diffperf=pr_test",
        f"--diffperf-baselines={sglang_data / 'v0.5.23' / 'perf_baselines'}",
        "--diffperf-hardware=hopper",
        "--diffperf-cases=cases.json",
        "--collect-only",
        "-q",
    )
    ids = [line.split("::", 1)[1] for line in result.outlines if "::" in line]
    keys = json.loads((sglang_data / "v0.5.23" / "perf_baselines" / "h100.json").read_text())["scenarios"]
    assert ids == list(keys) and len(ids) == 84
    assert "wan2_1_t2v_1.3b" in ids and "fsdp-inference" in ids and "ltx_2.3_one_stage_ti2v" in ids


def test_npu_hardware_collects_only_the_npu_fragment(pytester, sglang_data):
    result = pytester.runpytest(
        "--diffperf=long_term",
        f"--diffperf-baselines={sglang_data / 'v0.5.23' / 'perf_baselines'}",
        "--diffperf-hardware=npu",
        "--collect-only",
        "-q",
    )
    result.stdout.fnmatch_lines(["*13 tests collected*"])
    assert "::flux_image_t2i_npu" in result.stdout.str()


def test_ini_keys_configure_the_plugin_and_command_line_wins(pytester, suite):
    suite([tiny_case("from_ini")], {"from_ini": GENEROUS})
    (pytester.path / "other.json").write_text(
        (pytester.path / "baselines.json").read_text().replace("from_ini", "from_cli")
    )
    pytester.makeini(
        "[pytest]\ndiffperf_baselines = baselines.json\ndiffperf_cases = cases.json\n"
        "diffperf_server = reference\ndiffperf_hardware = cpu\n"
    )
    ini_run = pytester.runpytest("--diffperf=pr_test", "--collect-only", "-q")
    ini_run.stdout.fnmatch_lines(["baselines.json::from_ini"])
    cli_run = pytester.runpytest("--diffperf=pr_test", "--diffperf-baselines=other.json", "--collect-only", "-q")
    cli_run.stdout.fnmatch_lines(["other.json::from_cli", "other.json::from_ini"])


def test_user_errors_are_one_line_without_traceback(pytester, suite):
    args = suite([tiny_case("a")], {"a": GENEROUS})
    cases = [
        (["--diffperf=nightly"], "unknown tolerance profile 'nightly'; the file has: pr_test, long_term"),
        (["--diffperf-baselines=missing.json"], "missing.json: file not found"),
        (["--diffperf-hardware=tpu"], "--diffperf-hardware: unknown platform 'tpu'; expected one of: h100, b200"),
        (["--diffperf-server=comfy"], "unknown launcher 'comfy'; known: reference, sglang"),
        (["--diffperf-preset=fast"], "--diffperf-preset: expected one of sglang, got 'fast'"),
        (
            ["--diffperf-startup-timeout=-1"],
            "--diffperf-startup-timeout: expected a positive number of seconds, at most 604800 (a week)",
        ),
        (["--diffperf-request-timeout=soon"], "--diffperf-request-timeout: expected a number of seconds, got 'soon'"),
        (
            ["--diffperf-shard-id=first", "--diffperf-num-shards=2"],
            "--diffperf-shard-id: expected an integer >= 1, got 'first'",
        ),
        (
            ["--diffperf-num-shards=0", "--diffperf-shard-id=1"],
            "--diffperf-num-shards: expected an integer >= 1, got '0'",
        ),
        (["--diffperf-devices=0,,1"], "--diffperf-devices: expected device ids separated by commas (e.g. 0,1,2,3)"),
    ]
    (pytester.path / "broken_cases.json").write_text('{"cases": [{"id": "a", "task": "text-to-image"}]}')
    cases.append((["--diffperf-cases=broken_cases.json"], "broken_cases.json: cases.0.model: required key is missing"))
    for extra, expected in cases:
        result = pytester.runpytest(*args, *extra)
        err = result.stderr.str()
        assert result.ret == 4, (extra, err)
        assert expected in err, (extra, err)
        assert "Traceback" not in err and err.count("ERROR: diffperf:") == 1


def test_the_platform_is_parsed_once_where_it_is_given(pytester, suite):
    """An alias is read as its platform's name (the header says it); an unknown one names the ini key."""
    args = [a for a in suite([tiny_case("a")], {"a": GENEROUS}) if not a.startswith("--diffperf-hardware")]
    result = pytester.runpytest(*args, "--diffperf-hardware=Hopper", "--collect-only")
    result.stdout.fnmatch_lines(["diffperf: hardware=h100"])
    pytester.makeini("[pytest]\ndiffperf_hardware = gfx\n")
    result = pytester.runpytest(*args, "--collect-only")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [f"ERROR: diffperf: ini key diffperf_hardware ({pytester.path / 'tox.ini'}): unknown platform 'gfx'; *"]
    )


def test_a_bad_ini_value_names_the_ini_key_and_file(pytester, suite):
    args = suite([tiny_case("a")], {"a": GENEROUS})
    pytester.makeini("[pytest]\ndiffperf_startup_timeout = soon\ndiffperf_ab_tolerance = 0\n")
    result = pytester.runpytest(*args)
    assert result.ret == 4
    ini = pytester.path / "tox.ini"
    result.stderr.fnmatch_lines(
        [f"ERROR: diffperf: ini key diffperf_startup_timeout ({ini}): expected a number of seconds, got 'soon'"]
    )
    result = pytester.runpytest(*args, "--diffperf-startup-timeout=60")  # the command line wins, then the next key
    result.stderr.fnmatch_lines(
        [f"ERROR: diffperf: ini key diffperf_ab_tolerance ({ini}): expected a fraction > 0 such as 0.1 or 10%, got '0'"]
    )


def test_diffperf_without_baselines_says_what_to_pass(pytester):
    result = pytester.runpytest("--diffperf=pr_test")
    assert result.ret == 4
    assert "needs a baseline file: pass --diffperf-baselines PATH" in result.stderr.str()
