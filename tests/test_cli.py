"""`diffperf` as a command: --version, options between positionals, a closed pipe, findings counted once,
the plugin's option names with the old ones kept."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

from pytest_diffperf import __version__
from tests.support.cli import diffperf
from tests.support.suite import tiny_case


def test_version():
    result = diffperf("--version")
    assert (result.returncode, result.stdout) == (0, f"diffperf (pytest-diffperf) {__version__}\n")


def test_options_may_go_between_positionals(layout):
    folder = str(layout / "perf_baselines")
    after = diffperf("show", folder, "img_t2i", "--hardware", "h100")
    between = diffperf("show", folder, "--hardware", "h100", "img_t2i")
    before = diffperf("show", "--hardware", "h100", folder, "img_t2i")
    assert after.returncode == 0 and after.stdout.count("img_t2i  (") == 1
    assert between == after == before


def test_lint_takes_options_between_files(layout):
    files = [str(layout / "perf_baselines" / "h100.json"), str(layout / "perf_baselines" / "b200.json")]
    between = diffperf("lint", files[0], "--json", files[1])
    assert between.returncode == 0 and between == diffperf("lint", *files, "--json")
    assert {f["file"] for f in json.loads(between.stdout)} == {files[0]}  # its unguarded e2e_only


def test_a_closed_pipe_ends_quietly(sglang_data):
    # --json of SGLang's H100 file is ~400 KB: far more than a pipe holds, so the write after `head` exits fails
    code = "import sys; from pytest_diffperf.cli import main; sys.exit(main())"
    done = subprocess.run(
        f"{sys.executable} -c '{code}' show --json --hardware h100 {sglang_data / 'v0.5.23' / 'perf_baselines'}"
        " | head -1; exit ${PIPESTATUS[0]}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout == "{\n"
    assert done.stderr == "" and done.returncode == 1


def test_lint_counts_each_finding_once(sglang_data):
    result = diffperf("lint", str(sglang_data / "v0.5.23" / "perf_baselines"), "--hardware", "h100")
    findings = [line for line in result.stdout.splitlines() if ": warning: " in line or ": error: " in line]
    assert findings and not [line for line, n in Counter(findings).items() if n > 1]
    assert result.stdout.splitlines()[-1] == f"0 error(s), {len(findings)} warning(s)"


def test_compare_takes_the_plugins_option_names_and_the_old_ones(tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": [tiny_case("a")]}))
    new = diffperf("compare", "--cases", str(cases), "--server", "reference", "--dry-run", "-o", str(tmp_path / "o"))
    old = diffperf(
        "compare", "--config", str(cases), "--frameworks", "reference", "--dry-run", "--output", str(tmp_path / "o")
    )
    assert new.returncode == 0 and "a (reference): tiny/flux-t2i, text-to-image" in new.stdout
    assert new == old
