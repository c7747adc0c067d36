"""Two runs writing one ``--diffperf-json``: the second is refused at its start (nothing written, nothing started),
never left to overwrite the first one's file silently; once the first ends, the file is free again."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.support.suite import GENEROUS, tiny_case

HOLDER = textwrap.dedent(
    """
    import sys, time
    from filelock import FileLock
    lock = FileLock(sys.argv[1]); lock.acquire(); print("held", flush=True); time.sleep(60)
    """
)


def test_a_second_run_writing_the_same_results_file_is_refused(pytester, suite, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # the scenario is skipped: nothing starts, yet the file is written
    args = [*suite([tiny_case("two_gpus", num_gpus=2)], {"two_gpus": GENEROUS}), "--diffperf-allow-empty"]
    lock = pytester.path / ".results.json.run.lock"
    first = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdout=subprocess.PIPE, text=True)
    try:  # another process holds the run's lock, as a running pytest does
        assert first.stdout is not None and first.stdout.readline().strip() == "held"
        (pytester.path / "results.json").write_text("the first run's\n")
        for where in ("results.json", str(pytester.path / "results.json")):
            result = pytester.runpytest(*args, f"--diffperf-json={where}")
            assert result.ret == pytest.ExitCode.USAGE_ERROR
            result.stderr.fnmatch_lines(
                [
                    f"ERROR: diffperf: --diffperf-json: {pytester.path / 'results.json'} is being written by another pytest run, which holds "
                    f"{lock}: wait for it to end, or write this run's results elsewhere"
                ]
            )
        assert (pytester.path / "results.json").read_text() == "the first run's\n"
    finally:
        first.kill()
        first.wait()
        if first.stdout is not None:
            first.stdout.close()
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    assert (pytester.path / "results.json").read_text().startswith("{")
