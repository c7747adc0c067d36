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


def test_a_subcommand_imports_its_own_module_only_and_the_overview_lists_all(tmp_path):
    """Each run imports one command's module (``diffperf merge`` starts ~0.3 s sooner than with all eleven); an
    unknown subcommand still gets argparse's list of every one."""
    code = (
        "import sys; from pytest_diffperf.cli import main; code = main(sys.argv[1:]); "
        "print(sorted(m for m in sys.modules if m.startswith('pytest_diffperf.commands.'))); sys.exit(code)"
    )
    ran = subprocess.run([sys.executable, "-c", code, "merge", str(tmp_path / "none.json"), "-o", "out.json"],
                         capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert ran.returncode == 2 and "none.json: file not found" in ran.stderr
    assert ran.stdout.splitlines()[-1] == "['pytest_diffperf.commands.merge']"
    unknown = diffperf("merj")
    assert unknown.returncode == 2 and "invalid choice: 'merj'" in unknown.stderr
    assert all(name in unknown.stderr for name in ("lint", "merge", "verify-sglang", "bisect"))


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
