"""`diffperf verify-sglang` on the vendored releases: each release's own harness against the plugin.

At a release's openai pin (its wheel's Requires-Dist: 2.6.1 for 0.5.12 and 0.5.17, 2.8.0 for
0.5.23) every H100 case is equal or not expressible: request bodies and server commands and
environments agree with SGLang's own ``get_generate_fn`` and ``diffusion_server``. tests/openai_pinned.sh
runs this module under each pin; under another openai the pinned checks skip, and verify-sglang itself is run
at the pin it installs into a cache (from the package index: skipped without one).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_diffperf import cli
from pytest_diffperf.errors import DiffperfError
from pytest_diffperf.sglang import openaipin
from pytest_diffperf.sglang.source import SERVER_DIR
from tests.support.paths import REPO, SGLANG_DATA

RELEASES = {v: SGLANG_DATA / f"v{v}" / "src" for v in ("0.5.12", "0.5.17", "0.5.23")}
PINS = {"0.5.12": "2.6.1", "0.5.17": "2.6.1", "0.5.23": "2.8.0"}
# H100 suites: cases, equal, not expressible (the not expressible ones are checked in test_caselist.py)
COUNTS = {"0.5.12": (62, 58, 4), "0.5.17": (70, 64, 6), "0.5.23": (85, 78, 7)}
pytestmark = pytest.mark.skipif(
    not all((p / SERVER_DIR / "test_server_utils.py").is_file() for p in RELEASES.values()),
    reason="the vendored SGLang harness files are absent",
)


def openai_version() -> str | None:
    try:
        return importlib.metadata.version("openai")
    except importlib.metadata.PackageNotFoundError:
        return None


if os.environ.get("DIFFPERF_EXPECT_OPENAI", openai_version()) != openai_version():
    raise RuntimeError(f"expected openai {os.environ['DIFFPERF_EXPECT_OPENAI']}, found {openai_version()}")


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_every_h100_case_is_equal_or_not_expressible_at_the_release_s_openai_pin(version, capsys):
    if openai_version() != PINS[version]:
        pytest.skip(f"openai {openai_version()}: SGLang {version} pins {PINS[version]} (tests/openai_pinned.sh)")
    assert cli.main(["verify-sglang", str(RELEASES[version])]) == 0
    out = capsys.readouterr().out
    cases, equal, not_expressible = COUNTS[version]
    assert f"SGLang {version} (its harness has" in out.splitlines()[0]
    assert f": {cases} case(s): {equal} equal, {not_expressible} not expressible (" in out.splitlines()[-1]
    assert "warning" not in out and " different " not in out


@pytest.mark.server  # installs openai from the package index, then runs verify-sglang in a child interpreter
def test_with_another_openai_the_harness_runs_at_the_release_s_pin_from_the_cache(tmp_path, monkeypatch, capsys):
    """The README's environment (openai 3.x): verify-sglang installs the pin once into its cache and is green."""
    if openai_version() == PINS["0.5.23"]:
        pytest.skip("openai is at 0.5.23's pin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    try:
        openaipin.pinned_folder(PINS["0.5.23"])
    except DiffperfError as exc:
        pytest.skip(f"no package index here: {exc}")
    capfd_out = tmp_path / "out.txt"
    with capfd_out.open("w") as out:
        code = subprocess.run(
            [sys.executable, "-m", "pytest_diffperf.cli", "verify-sglang", str(RELEASES["0.5.23"]), "--suite", "1-gpu"],
            stdout=out, stderr=subprocess.STDOUT, check=False, env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))},
        ).returncode  # fmt: skip
    text = capfd_out.read_text()
    assert code == 0, text
    folder = tmp_path / "cache" / "pytest-diffperf" / "openai" / "2.8.0"
    assert text.splitlines()[0] == (
        f"diffperf verify-sglang: SGLang 0.5.23 pins openai==2.8.0 (openai {openai_version()} is installed): its "
        f"harness runs with openai 2.8.0 from {folder}"
    )
    assert " different " not in text and "warning" not in text


def test_a_pin_that_cannot_be_installed_is_one_line_saying_what_to_install(tmp_path, monkeypatch, capsys):
    if openai_version() == PINS["0.5.23"]:
        pytest.skip("openai is at 0.5.23's pin")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # offline
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    assert cli.main(["verify-sglang", str(RELEASES["0.5.23"])]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"diffperf verify-sglang: error: openai: SGLang's harness needs openai==2.8.0 (openai {openai_version()} is "
        "installed) and installing it failed (exit 1, log "
    )
    assert "install it yourself: " in err and " --target " in err and "openai==2.8.0" in err
    assert len(err.strip().splitlines()) == 1


def test_as_installed_the_harness_runs_with_another_openai_and_says_so(capsys):
    if openai_version() == PINS["0.5.23"]:
        pytest.skip("openai is at 0.5.23's pin")
    cli.main(["verify-sglang", str(RELEASES["0.5.23"]), "--suite", "4-gpu-h100", "--openai-as-installed"])
    out = capsys.readouterr().out
    assert f"warning: SGLang 0.5.23 pins openai==2.8.0, the harness runs with openai {openai_version()}" in out


@pytest.mark.server
def test_a_difference_is_shown_with_the_first_differing_argument_and_exits_1(tmp_path, capsys):
    tree = tmp_path / "src"
    shutil.copytree(RELEASES["0.5.23"] / "sglang", tree / "sglang")
    common = tree / SERVER_DIR / "test_server_common.py"
    text = common.read_text()
    assert text.count('    extra_args += " --strict-ports"\n') == 1
    common.write_text(
        text.replace('    extra_args += " --strict-ports"\n', '    extra_args += " --strict-ports --new-flag 3"\n')
    )
    assert cli.main(["verify-sglang", str(tree), "--suite", "1-gpu", "--openai-as-installed"]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("qwen_image_t2i "))
    assert row.split()[1:3] == ["generate_image", "different"]
    assert "command: argument 12: SGLang '--new-flag', plugin '--warmup-sampling-params'" in row
    assert any(" not expressible " in line and line.startswith("pi05_action_http") for line in out.splitlines())


def test_a_source_without_the_harness_is_one_error(tmp_path, capsys):
    tree = tmp_path / "src"
    shutil.copytree(RELEASES["0.5.12"] / "sglang", tree / "sglang")
    (tree / SERVER_DIR / "test_server_common.py").unlink()
    assert cli.main(["verify-sglang", str(tree)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"diffperf verify-sglang: error: {tree / SERVER_DIR}: this SGLang tree has no test_server_common.py"
    )
    assert "Traceback" not in err


def test_the_older_release_s_rules_are_what_verify_compares_with(tmp_path, capsys):
    """0.5.17 has no access-log flag and no quality pins: judged as 0.5.23, its commands differ (the table's rows)."""
    if openai_version() != PINS["0.5.17"]:
        pytest.skip(f"openai {openai_version()}: SGLang 0.5.17 pins 2.6.1")
    assert cli.main(["verify-sglang", str(RELEASES["0.5.17"]), "--suite", "1-gpu", "--sglang-semantics=0.5.23"]) == 1
    out = capsys.readouterr().out
    assert "command: plugin has more: --uvicorn-access-log-exclude-prefixes /health" in out


def test_verify_runs_offline_on_a_folder_given_relative(monkeypatch, capsys):
    monkeypatch.chdir(Path(RELEASES["0.5.12"]).parent)
    cli.main(["verify-sglang", "src", "--suite", "2-gpu", "--openai-as-installed"])
    out = capsys.readouterr().out
    assert (
        f"SGLang 0.5.12 (its harness has run_component_accuracy_check: 0.5.12 or later), {RELEASES['0.5.12'].resolve()}"
        in out
    )
    assert ": 22 case(s): " in out.splitlines()[-1]
