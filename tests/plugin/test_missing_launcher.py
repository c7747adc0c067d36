"""A launcher whose program is not installed here (``sglang`` by default, from a folder without the ini that
names the reference server) is named, with how to change it: in the header, and in the failed start's error
(``exited with code 127``). The only process started is the server's watchdog, which cannot start it."""

from __future__ import annotations

import pytest

from tests.support.suite import GENEROUS, refservers, results, tiny_case

HINT = (
    "'sglang' is not installed here (not on PATH) for launcher 'sglang' (--diffperf-server): install SGLang "
    "(pip install sglang), or pass --diffperf-server=reference for the bundled CPU reference server"
)


@pytest.fixture
def no_sglang(pytester, monkeypatch):
    empty = pytester.mkdir("bin")
    monkeypatch.setenv("PATH", str(empty))  # whatever this machine has installed: no program named sglang


def test_the_default_launcher_without_sglang_is_named_with_how_to_change_it(pytester, suite, no_sglang):
    args = [a for a in suite([tiny_case("a")], {"a": GENEROUS}) if a != "--diffperf-server=reference"]
    collected = pytester.runpytest(*args, "--co")
    collected.stdout.fnmatch_lines(["diffperf: launcher=sglang", f"diffperf: warning: {HINT}"])
    result = pytester.runpytest(*args, "--diffperf-startup-timeout=60")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [f"server http://127.0.0.1:* exited with code 127 while starting: {HINT}", "*cannot start 'sglang'*"]
    )
    (scenario,) = results(pytester)["scenarios"]
    assert scenario["verdict"] == "error" and HINT in scenario["message"]
    assert not refservers()


def test_the_reference_launcher_has_no_warning(pytester, suite, no_sglang):
    result = pytester.runpytest(*suite([tiny_case("a")], {"a": GENEROUS}), "--co")
    assert "not installed here" not in result.stdout.str()
