"""The README's main job on an install of the ``all`` extra alone (``pip install -e ".[all]"``).

``pytest --diffperf=pr_test`` at the repository root loads ``tests/conftest.py`` (pytest reads the
conftests of ``testpaths`` before the plugin picks the baseline file), so that file must not need
the ``test`` extra's packages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import probe
from tests.support.paths import REPO

TEST_EXTRA_ONLY = ("hypothesis", "openai", "cv2", "lxml", "xdist")


def test_the_main_job_collects_without_the_test_extra():
    # No plugin autoloading: xdist's and hypothesis's pytest plugins are absent with their packages
    # (and pytest would trip over their blocked modules); the plugin is named instead. Consistency is
    # skipped: its up-front check imports open_clip (8 s), which is not what this is about.
    env = os.environ | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "DIFFPERF_SKIP_CONSISTENCY": "1"}
    args = ("-p", "pytest_diffperf.plugin", "-p", "no:cacheprovider", "--diffperf=pr_test", "--co", "-q")
    outcome, output = probe.run_pytest(REPO, *args, block=TEST_EXTRA_ONLY, env=env)
    assert outcome["code"] == 0, output
    assert "7 tests collected" in output, output


def test_pytester_runs_do_not_warn_about_rewriting_the_plugin(tmp_path: Path):
    """The README's ``pytest`` (the console script, no ``-m``) with an editable install: the outer run imports the
    plugin before the rootdir, and the ``pytest_diffperf.egg-info`` the install left there, are on ``sys.path``;
    each inner pytester run then finds that egg-info's pytest11 entry and marks the package for rewriting."""
    script = Path(sys.executable).with_name("pytest")
    if not script.is_file():
        pytest.skip(f"no pytest console script beside {sys.executable}")
    egg = tmp_path / "pytest_diffperf.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: pytest-diffperf\nVersion: 0.1.0\n")
    (egg / "entry_points.txt").write_text("[pytest11]\ndiffperf = pytest_diffperf.plugin\n")
    (egg / "SOURCES.txt").write_text("pytest_diffperf/__init__.py\npytest_diffperf/plugin.py\n")
    (tmp_path / "conftest.py").write_text("")  # a rootdir conftest: pytest puts the rootdir on sys.path
    (tmp_path / "test_outer.py").write_text(
        "def test_outer(pytester):\n"
        "    pytester.makepyfile(test_a='def test_a(): pass')\n"
        "    result = pytester.runpytest()\n"
        "    result.assert_outcomes(passed=1)\n"
        "    assert 'rewritten' not in result.stdout.str(), result.stdout.str()\n"
    )
    source = tmp_path / "source"  # the package without the checkout's own egg-info beside it
    source.mkdir()
    (source / "pytest_diffperf").symlink_to(REPO / "pytest_diffperf")
    env = os.environ | {"PYTHONPATH": str(source)}
    args = [
        str(script),
        "-p",
        "pytester",
        "-p",
        "no:cacheprovider",
        "-q",
        f"--basetemp={tmp_path / 'tmp'}",
        "test_outer.py",
    ]
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
