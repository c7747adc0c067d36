"""--diffperf-compare-to: the earlier run it reads, a results file of this version or the previous one."""

from __future__ import annotations

from pathlib import Path

from pytest_diffperf.results import history
from pytest_diffperf.suite.runs import earlier_run
from tests.support import resultfiles


def test_a_previous_version_file_is_read_with_this_versions_statuses():
    what, doc = earlier_run(resultfiles.PREVIOUS, None)
    assert (what, doc["version"]) == (str(resultfiles.PREVIOUS), 3)
    assert [s["consistency"]["status"] for s in doc["scenarios"]] == ["pass", "pass"]


def test_last_is_the_latest_run_of_a_history_of_both_versions(tmp_path):
    old, new = resultfiles.previous(), resultfiles.current()
    old["provenance"]["timestamp"] = "2026-12-03T15:27:52+00:00"  # the previous version's file is the later run
    for doc in (new, old):
        history.save(tmp_path, doc)
    what, doc = earlier_run(Path("last"), tmp_path)
    assert doc["version"] == 3 and what.endswith("(2026-12-03 15:27 e141e50)")
    assert [s["consistency"]["status"] for s in doc["scenarios"]] == ["pass", "pass"]
