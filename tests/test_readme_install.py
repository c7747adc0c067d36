"""The README's main job on an install of the ``all`` extra alone (``pip install -e ".[all]"``).

``pytest --diffperf=pr_test`` at the repository root loads ``tests/conftest.py`` (pytest reads the
conftests of ``testpaths`` before the plugin picks the baseline file), so that file must not need
the ``test`` extra's packages.
"""

from __future__ import annotations

import os

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
